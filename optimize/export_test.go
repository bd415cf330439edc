package optimize

// ForceNCHWc makes the nchwc pass rewrite (on) or not whether or not the
// blocked convolution has vector kernels here, until restore is called.
func ForceNCHWc(on bool) (restore func()) {
	old := nchwcOn
	nchwcOn = func() bool { return on }
	return func() { nchwcOn = old }
}
