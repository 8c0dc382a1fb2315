package actors

// Epoched is an op that needs the ownership epoch its owner decides under.
//
// The cluster router calls SetEpoch with the ring's epoch on ops that
// implement it, before running them as the owner of their partition (not
// as a replica). Epochs increase strictly, cluster-wide, across ownership
// changes, so an op can derive values from them that a later owner never
// issues lower (LeaseReserve's fencing tokens). An op that is never given
// an epoch runs with epoch 0 and must stay correct then.
type Epoched interface{ SetEpoch(epoch uint64) }
