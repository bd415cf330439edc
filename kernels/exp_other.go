//go:build !amd64 || purego

package kernels

func siluF32Vec(o, a []float32) int { return 0 }

func siluBiasF32Vec(v []float32, b float32) int { return 0 }

func siluGradF32Vec(out, x, dy []float32) int { return 0 }

func softmaxExpF32Vec(o, d []float32) int { return 0 }
