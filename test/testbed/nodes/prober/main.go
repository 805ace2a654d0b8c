// The node lab's live-traffic prober (issue 14): runs in a pod through the whole migration and records what a
// workload would see. Three probes, each on its own clock:
//   - dns:   lookups of Service names through the nameserver in this pod's /etc/resolv.conf (search domains and
//     all, as a workload resolves them), PROBE_DNS_RATE per second;
//   - name:  HTTP GETs to each Service by name, through kube-proxy, a new connection each time;
//   - oldip: HTTP GETs to a Service's ClusterIP from before the migration, as a client that cached it would.
//
// Output (JSON lines, one file per pod in PROBE_OUT, on the host so it outlives the pod): a "start" record, one
// "second" record per probe and target with its successes and failures, each failure with its error (the first
// few per second), and one "outage" record per run of failures (first failure to the next success). Only the
// standard library: the image is this binary alone.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const timeout = 2 * time.Second

// stages: how far a failed request got (the lookup, the connection to the address kube-proxy translates, the
// answer), so an outage says which path failed.
type stages struct {
	mu        sync.Mutex
	dnsErr    error
	dialed    string
	connErr   error
	connected bool
	wrote     bool
}

func (s *stages) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSDone:      func(info httptrace.DNSDoneInfo) { s.mu.Lock(); s.dnsErr = info.Err; s.mu.Unlock() },
		ConnectStart: func(_, addr string) { s.mu.Lock(); s.dialed = addr; s.mu.Unlock() },
		ConnectDone: func(_, _ string, err error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.connErr, s.connected = err, err == nil
		},
		WroteRequest: func(httptrace.WroteRequestInfo) { s.mu.Lock(); s.wrote = true; s.mu.Unlock() },
	}
}

func (s *stages) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.dnsErr != nil:
		return "lookup failed"
	case s.dialed == "":
		return "no connect started (lookup unfinished)"
	case !s.connected && s.connErr == nil:
		return "connecting to " + s.dialed + ", no answer to the SYN"
	case !s.connected:
		return "connect to " + s.dialed + " failed"
	case s.wrote:
		return "connected to " + s.dialed + ", request sent, no response"
	default:
		return "connected to " + s.dialed + ", request not sent"
	}
}

// failures logged one by one per probe, target and second; the rest are only counted
const failuresLoggedPerSecond = 3

type key struct{ probe, target string }

type counts struct{ ok, fail, logged int }

type outage struct {
	from     time.Time
	failures int
}

type recorder struct {
	mu      sync.Mutex
	out     *json.Encoder
	file    *os.File
	second  map[key]*counts
	open    map[key]*outage
	lastSec int64
}

func (r *recorder) write(record map[string]any) {
	_ = r.out.Encode(record)
}

// result records one probe's outcome at `at` (when it was sent, so an outage starts when the first failing probe left)
func (r *recorder) result(k key, at time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.second[k]
	if c == nil {
		c = &counts{}
		r.second[k] = c
	}
	if err == nil {
		c.ok++
		if o := r.open[k]; o != nil {
			r.write(map[string]any{"kind": "outage", "probe": k.probe, "target": k.target, "from": o.from.UnixMilli(), "to": at.UnixMilli(), "failures": o.failures})
			delete(r.open, k)
		}
		return
	}
	c.fail++
	if c.logged < failuresLoggedPerSecond {
		c.logged++
		r.write(map[string]any{"kind": "failure", "probe": k.probe, "target": k.target, "t": at.UnixMilli(), "error": err.Error()})
	}
	if o := r.open[k]; o != nil {
		o.failures++
	} else {
		r.open[k] = &outage{from: at, failures: 1}
	}
}

// flush writes the counts of the second that ended
func (r *recorder) flush(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, c := range r.second {
		r.write(map[string]any{"kind": "second", "probe": k.probe, "target": k.target, "t": now.Unix(), "ok": c.ok, "fail": c.fail})
	}
	r.second = map[key]*counts{}
	_ = r.file.Sync()
}

// stop records outages still open when the pod is stopped: they have no end, so they say so
func (r *recorder) stop(now time.Time) {
	r.flush(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, o := range r.open {
		r.write(map[string]any{"kind": "outage", "probe": k.probe, "target": k.target, "from": o.from.UnixMilli(), "to": now.UnixMilli(), "failures": o.failures, "open": true})
	}
	r.write(map[string]any{"kind": "stop", "t": now.UnixMilli()})
	_ = r.file.Sync()
}

func every(ctx context.Context, perSecond int, fn func(time.Time)) {
	if perSecond <= 0 {
		return
	}
	ticker := time.NewTicker(time.Second / time.Duration(perSecond))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case at := <-ticker.C:
			go fn(at)
		}
	}
}

func list(name string) []string {
	var out []string
	for _, v := range strings.Split(os.Getenv(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func rate(name string, fallback int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return fallback
}

func nameservers() []string {
	data, _ := os.ReadFile("/etc/resolv.conf")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" {
			out = append(out, f[1])
		}
	}
	return out
}

func main() {
	pod, node := os.Getenv("POD_NAME"), os.Getenv("NODE_NAME")
	dir := os.Getenv("PROBE_OUT")
	if dir == "" || pod == "" {
		fmt.Fprintln(os.Stderr, "prober: PROBE_OUT and POD_NAME are required")
		os.Exit(2)
	}
	file, err := os.OpenFile(filepath.Join(dir, pod+".jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prober:", err)
		os.Exit(1)
	}
	r := &recorder{out: json.NewEncoder(file), file: file, second: map[key]*counts{}, open: map[key]*outage{}}
	names, oldIPs := list("PROBE_NAMES"), list("PROBE_OLD_IPS")
	r.write(map[string]any{"kind": "start", "t": time.Now().UnixMilli(), "pod": pod, "node": node, "nameservers": nameservers(), "names": names, "oldIPs": oldIPs})

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	resolver := &net.Resolver{PreferGo: true}
	// a new connection per request: each one is translated by kube-proxy's rules as they are at that moment
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(url string) error {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		var stage stages
		resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), stage.trace())))
		if err != nil {
			return fmt.Errorf("%w [%s]", err, stage.String())
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}

	var wg sync.WaitGroup
	start := func(perSecond int, fn func(time.Time)) {
		wg.Add(1)
		go func() { defer wg.Done(); every(ctx, perSecond, fn) }()
	}
	var next int
	var nextMu sync.Mutex
	start(rate("PROBE_DNS_RATE", 25), func(at time.Time) {
		nextMu.Lock()
		name := names[next%len(names)]
		next++
		nextMu.Unlock()
		lookup, done := context.WithTimeout(context.Background(), timeout)
		defer done()
		addrs, err := resolver.LookupHost(lookup, name)
		if err == nil && len(addrs) == 0 {
			err = fmt.Errorf("no address")
		}
		r.result(key{"dns", name}, at, err)
	})
	for _, name := range names {
		name := name
		start(rate("PROBE_HTTP_RATE", 5), func(at time.Time) { r.result(key{"name", name}, at, get("http://"+name+"/hostname")) })
	}
	for _, ip := range oldIPs {
		ip := ip
		start(rate("PROBE_HTTP_RATE", 5), func(at time.Time) { r.result(key{"oldip", ip}, at, get("http://"+ip+"/hostname")) })
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-ticker.C:
				r.flush(now)
			}
		}
	}()
	wg.Wait()
	// probes still in flight finish within their timeout
	time.Sleep(timeout)
	r.stop(time.Now())
}
