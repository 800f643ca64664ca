//go:build !race

package imapd

// raceEnabled: the race detector slows byte loops about tenfold.
const raceEnabled = false
