package optim

import "math"

// Schedule gives the learning rate of each step. Steps count from 0: the
// training loop writes LR(step) into the learning-rate parameter before
// running step number step. This is PyTorch's convention with the
// scheduler stepped once per optimizer step: LR(t) is the rate in effect
// when scheduler.last_epoch == t.
type Schedule interface {
	LR(step int) float64
}

// Constant is a fixed learning rate.
type Constant float64

// LR implements Schedule.
func (c Constant) LR(int) float64 { return float64(c) }

// StepDecay multiplies the rate by Gamma every StepSize steps, as
// torch.optim.lr_scheduler.StepLR:
//
//	LR(t) = Base · Gamma^⌊t / StepSize⌋
type StepDecay struct {
	Base     float64
	Gamma    float64
	StepSize int // > 0
}

// LR implements Schedule.
func (s StepDecay) LR(step int) float64 {
	if s.StepSize <= 0 || step < 0 {
		return s.Base
	}
	return s.Base * math.Pow(s.Gamma, float64(step/s.StepSize))
}

// Cosine anneals the rate from Base to Min over TotalSteps steps, as
// torch.optim.lr_scheduler.CosineAnnealingLR with T_max = TotalSteps and
// eta_min = Min, and stays at Min afterwards:
//
//	LR(t) = Min + (Base − Min) · (1 + cos(π·t/TotalSteps)) / 2   for t ≤ TotalSteps
//	LR(t) = Min                                                  for t > TotalSteps
//
// (past T_max PyTorch's rate follows the cosine back up; this one does
// not.)
type Cosine struct {
	Base, Min  float64
	TotalSteps int // > 0
}

// LR implements Schedule.
func (c Cosine) LR(step int) float64 {
	if c.TotalSteps <= 0 || step >= c.TotalSteps {
		return c.Min
	}
	if step <= 0 {
		return c.Base
	}
	return c.Min + (c.Base-c.Min)*(1+math.Cos(math.Pi*float64(step)/float64(c.TotalSteps)))/2
}

// Warmup ramps the rate up linearly over its first Steps steps, then
// hands over to Then, restarted at 0:
//
//	LR(t) = Then.LR(0) · (Start + (1 − Start) · t/Steps)   for t < Steps
//	LR(t) = Then.LR(t − Steps)                             for t ≥ Steps
//
// This is PyTorch's SequentialLR([LinearLR(start_factor=Start,
// end_factor=1, total_iters=Steps), then], milestones=[Steps]). A zero
// Start means 1/(Steps+1), so that the factor climbs (t+1)/(Steps+1) and
// the first step already moves.
type Warmup struct {
	Steps int
	Start float64  // factor at step 0, in (0, 1]; 0 means 1/(Steps+1)
	Then  Schedule // required
}

// LR implements Schedule.
func (w Warmup) LR(step int) float64 {
	if step >= w.Steps {
		return w.Then.LR(step - w.Steps)
	}
	start := w.Start
	if start == 0 {
		start = 1 / float64(w.Steps+1)
	}
	return w.Then.LR(0) * (start + (1-start)*float64(max(step, 0))/float64(w.Steps))
}
