package actors

// Len of every table, for the held-keys metric (Sizer).

func (t *velocityTable) Len() int      { return len(t.m) }
func (t *idempotencyTable) Len() int   { return len(t.m) }
func (t *assessmentTable) Len() int    { return len(t.m) }
func (t *reputationTable) Len() int    { return len(t.m) }
func (t *verificationTable) Len() int  { return len(t.m) }
func (t *breakerTable) Len() int       { return len(t.m) }
func (t *leaseTable) Len() int         { return len(t.m) }
func (t *markerTable) Len() int        { return len(t.m) }
func (t *redeemTable) Len() int        { return len(t.m) }
func (t *challengeRateTable) Len() int { return len(t.m) }
