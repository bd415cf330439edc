// Package nn builds neural-network layers into a program: each layer
// appends its ops with an ir.Builder and declares the parameters it reads,
// with their initializers, on a Module. The parameters themselves live in
// the executor's store; Module.Create makes them once, deterministically
// from a seed.
//
// A model is built twice from the same code: once for training (batch
// statistics, dropout, running-statistic updates) and once for evaluation.
// Both programs name their parameters identically, so they share one store.
package nn
