package optimize

// ForceNCHWc makes the nchwc pass rewrite whether or not the blocked
// convolution has vector kernels here, until restore is called.
func ForceNCHWc() (restore func()) {
	old := nchwcOn
	nchwcOn = func() bool { return true }
	return func() { nchwcOn = old }
}
