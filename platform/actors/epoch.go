package actors

// Epoched is an op that needs the ownership epoch its owner decides under
// (a lease grant's fencing token, for one). The cluster router sets it on
// the owner before the op runs; ring epochs increase strictly across
// ownership changes, cluster-wide. An op that is never given an epoch
// (a single node, a test) runs with epoch 0 and must stay correct then.
type Epoched interface{ SetEpoch(epoch uint64) }
