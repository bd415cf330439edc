package train

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/gopir/gopir/dist"
)

// Data-parallel runs (Config.Comm): what the trainer does besides running
// the training program that dist.ReduceGradients made.

// rankSeed is the seed of the random ops (dropout) of rank: rank 0 keeps
// the run's seed, so a job of one rank repeats a run without MPI, and the
// others get seeds of their own, so that their shards see independent
// masks.
func rankSeed(seed int64, rank int) int64 {
	if rank == 0 {
		return seed
	}
	z := uint64(seed) + uint64(rank)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return int64(z ^ z>>31)
}

// startReplicas makes every rank begin from rank 0's state: rank 0
// restores the checkpoint, if any, and broadcasts whether that worked and
// the step it reached; then every tensor of the store (parameters,
// optimizer state, running statistics) goes from rank 0 to the others.
// Every rank created its parameters from the same seed already; the
// broadcast makes sure, as DDP's does, and carries a resumed state to
// ranks that cannot read the checkpoint directory.
func (t *Trainer) startReplicas(resume string) error {
	status := make([]byte, 16) // ok flag, step
	var rerr error
	if t.rank == 0 {
		if resume != "" {
			rerr = t.restore(resume)
		}
		if rerr == nil {
			status[0] = 1
		}
		binary.LittleEndian.PutUint64(status[8:], uint64(t.step))
	}
	if err := t.comm.Broadcast(status, 0); err != nil {
		return fmt.Errorf("rank %d: broadcasting the start: %w", t.rank, err)
	}
	if rerr != nil {
		return rerr
	}
	if status[0] != 1 {
		return fmt.Errorf("--resume: rank 0 could not load the checkpoint (its message says why)")
	}
	t.step = int(binary.LittleEndian.Uint64(status[8:]))
	for _, n := range t.store.Names() {
		v, _ := t.store.Get(n)
		if err := t.comm.Broadcast(v.Raw(), 0); err != nil {
			return fmt.Errorf("rank %d: broadcasting %s: %w", t.rank, n, err)
		}
	}
	return nil
}

// ErrReplicasDiffer is the error of a step after which the ranks'
// parameters differ (Config.CheckReplicas).
var ErrReplicasDiffer = errors.New("the ranks' parameters differ")

// checkReplicas compares a CRC-32C of the values every rank must hold
// alike with rank 0's, and fails on every rank if any rank differs.
func (t *Trainer) checkReplicas() error {
	h := t.ReplicaHash()
	buf := make([]byte, 4)
	binary.LittleEndian.PutUint32(buf, h)
	if err := t.comm.Broadcast(buf, 0); err != nil {
		return err
	}
	root := binary.LittleEndian.Uint32(buf)
	differ, err := dist.AnyRank(t.comm, h != root)
	if err != nil {
		return err
	}
	if differ {
		return fmt.Errorf("step %d: %w (rank %d has CRC-32C %08x, rank 0 %08x)", t.step, ErrReplicasDiffer, t.rank, h, root)
	}
	return nil
}

// ReplicaHash is a CRC-32C (Castagnoli) of the values that every rank of
// a data-parallel run holds alike after each step: the trainable
// parameters and the optimizer state, and with SyncBN the batch norm
// running statistics too, in the order of their names.
func (t *Trainer) ReplicaHash() uint32 {
	tab := crc32.MakeTable(crc32.Castagnoli)
	var h uint32
	for _, n := range t.replicated {
		v, ok := t.store.Get(n)
		if !ok {
			continue
		}
		h = crc32.Update(h, tab, []byte(n))
		h = crc32.Update(h, tab, v.Raw())
	}
	return h
}

// Rank is this trainer's rank in its data-parallel job (0 alone), Ranks
// the job's size (1 alone).
func (t *Trainer) Rank() int  { return t.rank }
func (t *Trainer) Ranks() int { return t.ranks }

// stopTogether reports whether any rank has been interrupted, so that
// every rank stops after the same step.
func (t *Trainer) stopTogether(interrupted bool) (bool, error) {
	if t.comm == nil {
		return interrupted, nil
	}
	return dist.AnyRank(t.comm, interrupted)
}
