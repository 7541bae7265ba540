package main

import (
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
)

// The process's logger, and the configuration it logs at start with
// secrets masked.

// LogAttrs lists every setting by its variable name, secrets masked.
func (c Config) LogAttrs() []any {
	var attrs []any
	v := reflect.ValueOf(c)
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("env")
		val := v.Field(i)
		var text string
		switch {
		case val.Kind() == reflect.Pointer && val.IsNil():
			text = "(default)"
		case val.Kind() == reflect.Pointer:
			text = fmt.Sprint(val.Elem().Interface())
		default:
			text = fmt.Sprint(val.Interface())
		}
		switch f.Tag.Get("secret") {
		case "true":
			if text != "" {
				text = "****"
			}
		case "url":
			text = redactURL(text)
		}
		attrs = append(attrs, slog.String(name, text))
	}
	return attrs
}

// logStart logs the version and the whole configuration, secrets masked,
// at info level: what a process runs with is the first thing an operator
// looks for.
func logStart(log *slog.Logger, cfg Config) {
	log.Info("starting", append([]any{"version", version}, cfg.LogAttrs()...)...)
}

func redactURL(raw string) string {
	if raw == "" || !strings.Contains(raw, "://") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "****"
	}
	return u.Redacted()
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: l}))
}
