package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The provider role serves the bytes test/fakeprovider answers, replayed.
//
// fakeprovider records every request and response it handles, without bound (it is built
// for tests that inspect them): under 500 rps that is megabytes a second of growing heap and
// GC work in the floor every proxy is compared with. So the provider records one non-streamed
// and one streamed answer from fakeprovider at start (the exact bytes and headers, event by
// event) and replays them for every request, at a constant cost and with a constant heap.

// recording is one response of fakeprovider: headers, and the body or the stream's events.
type recording struct {
	header http.Header
	body   []byte
	events [][]byte
}

// recordAnswers asks fakeprovider, in process, for the answers the load requests get.
func recordAnswers(ctx context.Context, promptBytes, streamEvents int) (chat, stream recording, err error) {
	fp := fakeprovider.New(fakeprovider.WithDefault(fakeprovider.Script{
		Choices: []fakeprovider.Choice{{Deltas: answerDeltas(streamEvents)}},
	}))
	defer fp.Close()
	for _, streamed := range []bool{false, true} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fp.URL+"/v1/chat/completions",
			bytes.NewReader(chatRequest(promptBytes, streamed)))
		if err != nil {
			return chat, stream, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := fp.Client().Do(req)
		if err != nil {
			return chat, stream, fmt.Errorf("recording fakeprovider's answer: %w", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return chat, stream, fmt.Errorf("recording fakeprovider's answer: status %d", resp.StatusCode)
		}
	}
	rs := fp.Responses()
	if len(rs) != 2 || rs[0].Stream || !rs[1].Stream {
		return chat, stream, errors.New("recording fakeprovider's answer: unexpected responses")
	}
	chat = recording{header: rs[0].Header, body: rs[0].Body}
	stream = recording{header: rs[1].Header, events: rs[1].Events}
	for _, h := range []http.Header{chat.header, stream.header} {
		h.Del("Content-Length")
		h.Del("Date")
	}
	return chat, stream, nil
}

// replay answers POST /v1/chat/completions with the recorded bytes.
type replay struct {
	chat, stream recording
	// delay is waited before each event of a stream.
	delay time.Duration
}

func (p *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "the load provider serves POST /v1/chat/completions only", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	var params struct {
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &params); err != nil {
		http.Error(w, "invalid JSON body", http.StatusBadRequest)
		return
	}
	if !params.Stream {
		copyHeader(w.Header(), p.chat.header)
		w.Header().Set("Content-Length", strconv.Itoa(len(p.chat.body)))
		_, _ = w.Write(p.chat.body)
		return
	}
	copyHeader(w.Header(), p.stream.header)
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	var timer *time.Timer
	for _, ev := range p.stream.events {
		if p.delay > 0 {
			if timer == nil {
				timer = time.NewTimer(p.delay)
				defer timer.Stop()
			} else {
				timer.Reset(p.delay)
			}
			select {
			case <-timer.C:
			case <-r.Context().Done():
				return
			}
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = vs[:len(vs):len(vs)] // shared by every response: an append must copy
	}
}

// runProvider is the provider role: it prints its address on the first line of stdout and
// serves until SIGTERM or SIGINT.
func runProvider(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guardload provider", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "Address to listen on.")
	promptBytes := fs.Int("prompt-bytes", 2048, "Prompt size of the recorded request.")
	streamEvents := fs.Int("stream-events", 200, "Text deltas of a streamed answer.")
	delay := fs.Duration("event-delay", 0, "Delay before each event of a stream.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	chat, stream, err := recordAnswers(ctx, *promptBytes, *streamEvents)
	if err != nil {
		return err
	}
	return serve(ctx, *listen, &replay{chat: chat, stream: stream, delay: *delay})
}
