package remat
