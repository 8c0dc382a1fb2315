package messaging

import (
	"time"

	"github.com/trustd/trustd/platform/actors"
)

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

func nonceKey(ws, nonce string) string     { return actors.SpaceMsgNonce + ws + "/" + nonce }
func prefixKey(ws, h string) string        { return actors.SpaceMsgPrefix + ws + "/" + h }
func numberKey(ws, h string) string        { return actors.SpaceMsgNumber + ws + "/" + h }
func subjectKey(ws, h string) string       { return actors.SpaceMsgSubject + ws + "/" + h }
func countryKey(ws, c string) string       { return actors.SpaceMsgCountry + ws + "/" + c }
func blockKey(ws, h string) string         { return actors.SpaceMsgBlock + ws + "/" + h }
func sendsKey(ws, h string) string         { return actors.SpaceMsgSends + ws + "/" + h }
func verifiedKey(ws, h string) string      { return actors.SpaceMsgVerified + ws + "/" + h }
func failedKey(ws, h string) string        { return actors.SpaceMsgFailed + ws + "/" + h }
func refKey(ws, h string) string           { return actors.SpaceMsgRef + ws + "/" + h }
func messageKey(ws, h string) string       { return actors.SpaceMsgMessage + ws + "/" + h }
func eventKey(ws, h, status string) string { return actors.SpaceMsgEvent + ws + "/" + h + "/" + status }
