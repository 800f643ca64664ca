package imapwire

import "time"

// The layouts AppendTime writes by hand: an IMAP date-time (RFC 9051
// section 9), and the date of an ENVELOPE as imapserver writes it.
const (
	dateTimeLayout     = "_2-Jan-2006 15:04:05 -0700"
	envelopeDateLayout = "Mon, 02 Jan 2006 15:04:05 -0700"
)

var (
	shortDays   = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	shortMonths = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

// AppendTime appends t.Format(layout) to b. For dateTimeLayout and
// envelopeDateLayout and a year from 1000 to 9999 it writes the fields
// itself; time.Format reads the layout anew at every call, a sixth of a
// folder listing's encoding.
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func AppendTime(b []byte, t time.Time, layout string) []byte {
	if layout != dateTimeLayout && layout != envelopeDateLayout {
		return t.AppendFormat(b, layout)
	}
	year, month, day := t.Date()
	_, offset := t.Zone()
	if year < 1000 || year > 9999 || offset <= -100*3600 || offset >= 100*3600 {
		return t.AppendFormat(b, layout)
	}
	hour, min, sec := t.Clock()
	if layout == envelopeDateLayout {
		b = append(b, shortDays[t.Weekday()]...)
		b = append(b, ',', ' ', byte('0'+day/10), byte('0'+day%10), ' ')
	} else {
		if day < 10 {
			b = append(b, ' ', byte('0'+day))
		} else {
			b = append(b, byte('0'+day/10), byte('0'+day%10))
		}
		b = append(b, '-')
	}
	b = append(b, shortMonths[month-1]...)
	if layout == envelopeDateLayout {
		b = append(b, ' ')
	} else {
		b = append(b, '-')
	}
	b = append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), ' ',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), ' ')
	// As time.Format's "-0700": whole minutes of the offset, "+" for 0.
	zone := offset / 60
	if zone < 0 {
		b = append(b, '-')
		zone = -zone
	} else {
		b = append(b, '+')
	}
	h, m := zone/60, zone%60
	return append(b, byte('0'+h/10), byte('0'+h%10), byte('0'+m/10), byte('0'+m%10))
}
