package optimize

// ForceNCHWc makes the nchwc pass rewrite with channel block b (0: not
// at all) whatever the blocked convolution's vector kernels here take,
// until restore is called.
func ForceNCHWc(b int) (restore func()) {
	old := nchwcBlock
	nchwcBlock = func() int { return b }
	return func() { nchwcBlock = old }
}
