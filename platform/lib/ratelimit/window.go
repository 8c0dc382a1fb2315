package ratelimit

import (
	"errors"
	"fmt"
	"math"
)

// Window is the period of a fixed quota. Windows are aligned to the UTC
// calendar, not to the first request, so every node and every replay of the
// log agrees on where a window starts without storing it.
type Window uint8

// The zero Window is invalid, so a policy that forgot its window is noticed
// by ParseWindow instead of quietly becoming a per-minute quota.
const (
	Minute Window = iota + 1
	Hour
	Day
	Month
)

// ErrWindow means a quota window name is not minute, hour, day or month.
var ErrWindow = errors.New("ratelimit: unknown quota window")

const (
	minuteNs = int64(60e9)
	hourNs   = 60 * minuteNs
	dayNs    = 24 * hourNs
)

// ParseWindow accepts exactly the lower-case names of the spec.
func ParseWindow(s string) (Window, error) {
	switch s {
	case "minute":
		return Minute, nil
	case "hour":
		return Hour, nil
	case "day":
		return Day, nil
	case "month":
		return Month, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrWindow, s)
}

// String returns the name ParseWindow accepts, or "invalid".
func (w Window) String() string {
	switch w {
	case Minute:
		return "minute"
	case Hour:
		return "hour"
	case Day:
		return "day"
	case Month:
		return "month"
	}
	return "invalid"
}

// WindowStart returns the first instant of the UTC window holding now.
// Unix time has no leap seconds, so minute, hour and day are plain
// divisions; month follows the Gregorian calendar. An invalid Window is one
// window spanning all time, so a damaged policy never grants fresh quota.
// Results outside the int64 range saturate.
func WindowStart(w Window, now int64) int64 {
	switch w {
	case Minute:
		return satSub(now, floorMod(now, minuteNs))
	case Hour:
		return satSub(now, floorMod(now, hourNs))
	case Day:
		return satSub(now, floorMod(now, dayNs))
	case Month:
		y, m, _ := civil(floorDiv(now, dayNs))
		return daysToNs(daysFromCivil(y, m, 1))
	}
	return math.MinInt64
}

// WindowEnd returns the first instant after the window holding now, which is
// also the start of the next window and the quota's reset time.
func WindowEnd(w Window, now int64) int64 {
	switch w {
	// now+(size-mod) rather than start+size: the start may have saturated
	// where the end has not.
	case Minute:
		return satAdd(now, minuteNs-floorMod(now, minuteNs))
	case Hour:
		return satAdd(now, hourNs-floorMod(now, hourNs))
	case Day:
		return satAdd(now, dayNs-floorMod(now, dayNs))
	case Month:
		y, m, _ := civil(floorDiv(now, dayNs))
		if m == 12 {
			y, m = y+1, 1
		} else {
			m++
		}
		return daysToNs(daysFromCivil(y, m, 1))
	}
	return math.MaxInt64
}

func daysToNs(days int64) int64 {
	switch {
	case days < math.MinInt64/dayNs:
		return math.MinInt64
	case days > math.MaxInt64/dayNs:
		return math.MaxInt64
	}
	return days * dayNs
}

// civil and daysFromCivil are Howard Hinnant's proleptic Gregorian
// algorithms (days since 1970-01-01). They are exact integer arithmetic, so
// month windows need neither the time package's location machinery nor
// tables of month lengths, and leap years fall out of the 400-year era.
func civil(days int64) (y, m, d int64) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	return a - floorDiv(a, b)*b
}
