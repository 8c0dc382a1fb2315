package messaging

import "time"

// The actor key spaces of the messaging preflight, in one place. Every key
// carries the workspace id and, for a number, prefix, subject or message
// reference, only its workspace-keyed hash (never the value).
//
//	prefix                 op                          lifetime
//	msn/<ws>/<nonce>       actors.Consume              timestamp + tolerance + skew (replay)
//	msp/<ws>/<prefix>      actors.CountHit             prefix velocity window
//	msd/<ws>/<number>      actors.CountHit             number velocity window
//	mss/<ws>/<subject>     actors.CountHit             subject velocity window
//	msc/<ws>/<country>     actors.CountHit             country velocity window (country in clear: not personal)
//	msb/<ws>/<prefix>      actors.LabelSubject         the prefix block ("blocked:<until>"), BlockSeconds
//	msx/<ws>/<prefix>      actors.CountHit             allowed sends, conversion window
//	msv/<ws>/<prefix>      actors.CountHit             verified events, conversion window
//	msf/<ws>/<prefix>      actors.CountHit             failed events, conversion window
//	msr/<ws>/<ref>         actors.Consume              MessageTTL: a reference is allowed once
//	msm/<ws>/<ref>         actors.LabelSubject         MessageTTL: the reference's prefix hash
//	mse/<ws>/<ref>/<st>    actors.Consume              MessageTTL: one event of each status per message

// MessageTTL is how long an allowed message's reference is remembered for
// its delivery events.
const MessageTTL = 24 * time.Hour

func nonceKey(ws, nonce string) string     { return "msn/" + ws + "/" + nonce }
func prefixKey(ws, h string) string        { return "msp/" + ws + "/" + h }
func numberKey(ws, h string) string        { return "msd/" + ws + "/" + h }
func subjectKey(ws, h string) string       { return "mss/" + ws + "/" + h }
func countryKey(ws, c string) string       { return "msc/" + ws + "/" + c }
func blockKey(ws, h string) string         { return "msb/" + ws + "/" + h }
func sendsKey(ws, h string) string         { return "msx/" + ws + "/" + h }
func verifiedKey(ws, h string) string      { return "msv/" + ws + "/" + h }
func failedKey(ws, h string) string        { return "msf/" + ws + "/" + h }
func refKey(ws, h string) string           { return "msr/" + ws + "/" + h }
func messageKey(ws, h string) string       { return "msm/" + ws + "/" + h }
func eventKey(ws, h, status string) string { return "mse/" + ws + "/" + h + "/" + status }
