package sieve

import (
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"
)

// The date and currentdate tests (RFC 5260 sections 4 and 5).

// parseZone reads "+hhmm" or "-hhmm" (RFC 5260 section 4.1).
func parseZone(s string) (*time.Location, bool) {
	if len(s) != 5 || (s[0] != '+' && s[0] != '-') || !allDigits(s[1:]) {
		return nil, false
	}
	h, _ := strconv.Atoi(s[1:3])
	m, _ := strconv.Atoi(s[3:5])
	if h > 23 || m > 59 {
		return nil, false
	}
	off := (h*60 + m) * 60
	if s[0] == '-' {
		off = -off
	}
	return time.FixedZone(s, off), true
}

// datePart formats the date part named part of t (RFC 5260 section 4.2);
// ok is false for an unknown part.
func datePart(t time.Time, part string) (string, bool) {
	switch strings.ToLower(part) {
	case "year":
		return fmt.Sprintf("%04d", t.Year()), true
	case "month":
		return fmt.Sprintf("%02d", int(t.Month())), true
	case "day":
		return fmt.Sprintf("%02d", t.Day()), true
	case "date":
		return t.Format("2006-01-02"), true
	case "julian":
		// The Modified Julian Day: days since 1858-11-17.
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		epoch := time.Date(1858, 11, 17, 0, 0, 0, 0, time.UTC)
		return strconv.FormatInt(int64(d.Sub(epoch)/(24*time.Hour)), 10), true
	case "hour":
		return fmt.Sprintf("%02d", t.Hour()), true
	case "minute":
		return fmt.Sprintf("%02d", t.Minute()), true
	case "second":
		return fmt.Sprintf("%02d", t.Second()), true
	case "time":
		return t.Format("15:04:05"), true
	case "iso8601":
		return t.Format("2006-01-02T15:04:05-07:00"), true
	case "std11":
		return t.Format("Mon, 02 Jan 2006 15:04:05 -0700"), true
	case "zone":
		return t.Format("-0700"), true
	case "weekday":
		return strconv.Itoa(int(t.Weekday())), true
	}
	return "", false
}

// headerDate reads the date of a header field value; for Received it is
// after the last ";" (RFC 5260 section 4).
func headerDate(name, v string) (time.Time, bool) {
	if strings.EqualFold(name, "received") {
		i := strings.LastIndexByte(v, ';')
		if i < 0 {
			return time.Time{}, false
		}
		v = v[i+1:]
	}
	t, err := mail.ParseDate(strings.TrimSpace(v))
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

func (r *run) dateTest(t *test) (bool, error) {
	loc := r.opts.Location
	if t.zone != nil {
		z := r.expand(t.zone)
		l, ok := parseZone(z)
		if !ok {
			// RFC 5260 section 4.1: an invalid zone makes the test
			// fail rather than the script.
			return false, nil
		}
		loc = l
	}
	part := r.expand(t.date)
	var vals []string
	if t.kind == testCurrentDate {
		now := time.Now
		if r.opts.Now != nil {
			now = r.opts.Now
		}
		if s, ok := datePart(now().In(loc), part); ok {
			vals = append(vals, s)
		}
	} else {
		name := r.expand(t.header)
		for _, h := range indexed(r.header(name), t) {
			d, ok := headerDate(name, h)
			if !ok {
				continue
			}
			if !t.origTZ {
				d = d.In(loc)
			}
			if s, ok := datePart(d, part); ok {
				vals = append(vals, s)
			}
		}
	}
	return r.match(t.m, vals, true)
}
