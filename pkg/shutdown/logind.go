package shutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
)

// ErrNoLogind: systemd-logind does not run on this host (no system bus, or
// nothing owns org.freedesktop.login1), so nothing announces a shutdown.
var ErrNoLogind = errors.New("systemd-logind is not running")

// Logind is what the Manager needs of systemd-logind.
type Logind interface {
	// InhibitDelayMax is logind's InhibitDelayMaxUSec: how long a delay
	// lock may hold a shutdown back at most.
	InhibitDelayMax() (time.Duration, error)
	// Inhibit takes a delay lock on shutdown; closing it lets the shutdown
	// go on.
	Inhibit(who, why string) (io.Closer, error)
	// ReloadConfig makes logind read its configuration again.
	ReloadConfig() error
	// PrepareForShutdown delivers logind's PrepareForShutdown signals
	// (true: the shutdown begins; false: it was cancelled) until ctx ends
	// or the bus connection breaks, when the channel is closed.
	PrepareForShutdown(ctx context.Context) (<-chan bool, error)
}

const (
	logindName      = "org.freedesktop.login1"
	logindPath      = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
	systemdName     = "org.freedesktop.systemd1"
	systemdPath     = dbus.ObjectPath("/org/freedesktop/systemd1")
)

// DBusLogind talks to systemd-logind over the system bus.
type DBusLogind struct {
	conn *dbus.Conn
}

var _ Logind = (*DBusLogind)(nil)

// DialLogind connects to the system bus and checks that logind is on it;
// the error wraps ErrNoLogind when it is not.
func DialLogind() (*DBusLogind, error) {
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		return nil, fmt.Errorf("%w: system bus: %v", ErrNoLogind, err)
	}
	var owned bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, logindName).Store(&owned); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ask the system bus for %s: %w", logindName, err)
	}
	if !owned {
		conn.Close()
		return nil, fmt.Errorf("%w: nothing on the system bus owns %s", ErrNoLogind, logindName)
	}
	return &DBusLogind{conn: conn}, nil
}

// Close closes the bus connection.
func (l *DBusLogind) Close() error { return l.conn.Close() }

func (l *DBusLogind) InhibitDelayMax() (time.Duration, error) {
	v, err := l.conn.Object(logindName, logindPath).GetProperty(logindInterface + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, fmt.Errorf("read logind InhibitDelayMaxUSec: %w", err)
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("logind InhibitDelayMaxUSec is a %T, want uint64", v.Value())
	}
	return time.Duration(usec) * time.Microsecond, nil
}

func (l *DBusLogind) Inhibit(who, why string) (io.Closer, error) {
	var fd dbus.UnixFD
	err := l.conn.Object(logindName, logindPath).Call(logindInterface+".Inhibit", 0, "shutdown", who, why, "delay").Store(&fd)
	if err != nil {
		return nil, fmt.Errorf("take logind shutdown delay lock: %w", err)
	}
	// The lock lasts as long as the file descriptor is open.
	return os.NewFile(uintptr(fd), "logind-inhibit"), nil
}

func (l *DBusLogind) ReloadConfig() error {
	// logind rereads its configuration on SIGHUP; systemd sends it.
	call := l.conn.Object(systemdName, systemdPath).Call("org.freedesktop.systemd1.Manager.KillUnit", 0,
		"systemd-logind.service", "all", int32(syscall.SIGHUP))
	if call.Err != nil {
		return fmt.Errorf("reload systemd-logind: %w", call.Err)
	}
	return nil
}

func (l *DBusLogind) PrepareForShutdown(ctx context.Context) (<-chan bool, error) {
	match := []dbus.MatchOption{
		dbus.WithMatchObjectPath(logindPath), dbus.WithMatchInterface(logindInterface),
		dbus.WithMatchMember("PrepareForShutdown"),
	}
	if err := l.conn.AddMatchSignal(match...); err != nil {
		return nil, fmt.Errorf("watch logind PrepareForShutdown: %w", err)
	}
	signals := make(chan *dbus.Signal, 4)
	l.conn.Signal(signals)
	out := make(chan bool)
	go func() {
		defer close(out)
		defer l.conn.RemoveSignal(signals)
		for {
			select {
			case <-ctx.Done():
				return
			case s, ok := <-signals:
				if !ok {
					return
				}
				if s.Name != logindInterface+".PrepareForShutdown" || len(s.Body) != 1 {
					continue
				}
				active, ok := s.Body[0].(bool)
				if !ok {
					continue
				}
				select {
				case out <- active:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// Probe reports whether systemd-logind runs on this host: nil if it does,
// an error wrapping ErrNoLogind if it does not, another error if the bus
// could not tell.
func Probe() error {
	l, err := DialLogind()
	if err != nil {
		return err
	}
	return l.Close()
}
