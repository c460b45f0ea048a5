// Package logs reads and rotates container logs in the CRI log format the
// runtime writes: one line per write,
//
//	<RFC3339Nano time> <stdout|stderr> <P|F> <message>
//
// where P marks a partial line continued by the next entry and F the end of
// a line. Reader serves kubectl logs (tail, since, limit, timestamps,
// follow across rotations); Rotator keeps each running container's log
// under a size, moving the file aside and asking the runtime to reopen it.
package logs
