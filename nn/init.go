package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Init fills a new parameter. fanIn and fanOut are those of the layer that
// owns it (for a conv, channels times kernel area), as in PyTorch.
type Init interface {
	Fill(r *rand.Rand, fanIn, fanOut int, out []float64)
	String() string
}

// Constant fills every element with one value.
type Constant float64

func (c Constant) Fill(_ *rand.Rand, _, _ int, out []float64) {
	for i := range out {
		out[i] = float64(c)
	}
}

func (c Constant) String() string { return fmt.Sprintf("constant(%g)", float64(c)) }

// Zeros and Ones are the common constants.
const (
	Zeros = Constant(0)
	Ones  = Constant(1)
)

// Uniform draws from [Lo, Hi).
type Uniform struct{ Lo, Hi float64 }

func (u Uniform) Fill(r *rand.Rand, _, _ int, out []float64) {
	for i := range out {
		out[i] = u.Lo + (u.Hi-u.Lo)*r.Float64()
	}
}

func (u Uniform) String() string { return fmt.Sprintf("uniform(%g, %g)", u.Lo, u.Hi) }

// KaimingUniform is He initialization for ReLU layers:
// U(−b, b) with b = √(6 / fanIn).
type KaimingUniform struct{}

func (KaimingUniform) Fill(r *rand.Rand, fanIn, _ int, out []float64) {
	Uniform{-1, 1}.scaled(math.Sqrt(6/float64(max(fanIn, 1)))).Fill(r, 0, 0, out)
}

func (KaimingUniform) String() string { return "kaiming_uniform" }

// Normal draws from N(Mean, Std²), e.g. the small N(0, 0.001²) that
// detection heads give their attention layers.
type Normal struct{ Mean, Std float64 }

func (n Normal) Fill(r *rand.Rand, _, _ int, out []float64) {
	for i := range out {
		out[i] = n.Mean + n.Std*r.NormFloat64()
	}
}

func (n Normal) String() string { return fmt.Sprintf("normal(%g, %g)", n.Mean, n.Std) }

// KaimingNormal is He initialization with a normal law: N(0, 2 / fanIn).
type KaimingNormal struct{}

func (KaimingNormal) Fill(r *rand.Rand, fanIn, _ int, out []float64) {
	std := math.Sqrt(2 / float64(max(fanIn, 1)))
	for i := range out {
		out[i] = std * r.NormFloat64()
	}
}

func (KaimingNormal) String() string { return "kaiming_normal" }

// XavierUniform is Glorot initialization: U(−b, b) with
// b = √(6 / (fanIn + fanOut)).
type XavierUniform struct{}

func (XavierUniform) Fill(r *rand.Rand, fanIn, fanOut int, out []float64) {
	Uniform{-1, 1}.scaled(math.Sqrt(6/float64(max(fanIn+fanOut, 1)))).Fill(r, 0, 0, out)
}

func (XavierUniform) String() string { return "xavier_uniform" }

// FanInUniform is PyTorch's default for Linear and Conv2d weights and
// biases: U(−b, b) with b = 1/√fanIn.
type FanInUniform struct{}

func (FanInUniform) Fill(r *rand.Rand, fanIn, _ int, out []float64) {
	Uniform{-1, 1}.scaled(1/math.Sqrt(float64(max(fanIn, 1)))).Fill(r, 0, 0, out)
}

func (FanInUniform) String() string { return "fan_in_uniform" }

func (u Uniform) scaled(s float64) Uniform { return Uniform{u.Lo * s, u.Hi * s} }
