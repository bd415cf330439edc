// Package models is gopir's model zoo: each entry is a Task, a model
// together with its data and its evaluation metric, which the training
// loop (package train) and the command line (gopir train --model NAME)
// run.
//
//	mlp     784-512-256-10 on MNIST
//	lenet   LeNet-5 on MNIST
//	tinydet a small anchor-free detector whose loss has `if num_gts > 0`
//	rnn     a GRU cell applied in a while loop whose trip count comes from the data
//	gate    an MLP that takes one of two sub-networks through an if on a batch statistic
//
// ppyoloe_s, a PP-YOLOE-s style detector at its published architecture,
// lives in its own package, models/ppyoloe, which registers it here.
package models
