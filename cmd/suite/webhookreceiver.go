package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// runWebhookReceiver is `suite webhook-receiver`: a receiver of outbound
// webhooks for trying them out (README) — it verifies each delivery with
// the endpoint's secret, prints it as one line (webhook-id, then the body)
// and answers 204; a delivery whose signature does not verify is printed
// as refused and answered 401. Any other request is answered 200 (it
// listens). It serves until interrupted.
func runWebhookReceiver(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("webhook-receiver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:9099", "address to listen on")
	secret := fs.String("secret", "", "the endpoint's signing secret (whsec_…)")
	if err := fs.Parse(args); err != nil || *secret == "" {
		return usageError("usage: suite webhook-receiver -secret whsec_… [-addr 127.0.0.1:9099]\n")
	}
	wh, err := standardwebhooks.NewWebhook(*secret)
	if err != nil {
		return fmt.Errorf("the secret: %w", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusOK) // a check that it listens
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		if err != nil {
			fmt.Fprintf(stdout, "refused %s: %v\n", r.Header.Get(standardwebhooks.HeaderWebhookID), err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(stdout, "%s %s\n", r.Header.Get(standardwebhooks.HeaderWebhookID), body)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
