package devserver

import (
	"fmt"
	"net"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiopts "github.com/temporalio/ui-server/v2/server/server_options"
)

// The embedded Temporal Web UI: startUI returns once it listens.

func (s *Server) startUI() error {
	host, portText, err := net.SplitHostPort(s.opts.UIAddr)
	if err != nil {
		return fmt.Errorf("temporal UI address %q: %w", s.opts.UIAddr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("temporal UI port %q: %w", portText, err)
	}
	s.ui = uiserver.NewServer(uiopts.WithConfigProvider(&uiconfig.Config{
		TemporalGRPCAddress: s.opts.FrontendAddr,
		Host:                host,
		Port:                port,
		EnableUI:            true,
		DefaultNamespace:    s.opts.Namespace,
		HideLogs:            true,
		DisableNewsFetch:    true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		Distribution:        "business-suite",
	}))
	s.uiDone = make(chan struct{})
	go func() {
		defer close(s.uiDone)
		_ = s.ui.Start()
	}()
	return waitListening(s.opts.UIAddr, 10*time.Second)
}

func waitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not start listening within %s: %w", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
