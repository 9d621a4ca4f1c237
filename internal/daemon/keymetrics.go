package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The key ports' metrics, labelled port="resp" or port="udp".
var (
	keyRequestsDesc = prometheus.NewDesc("shardkeeper_keyport_requests_total",
		"Requests a key port answered: RESP commands, UDP datagram requests.", []string{"port"}, nil)
	keyKeysDesc = prometheus.NewDesc("shardkeeper_keyport_keys_total",
		"Keys a key port issued.", []string{"port"}, nil)
	keyErrorsDesc = prometheus.NewDesc("shardkeeper_keyport_errors_total",
		"Requests a key port answered with an error, by reason: request (the client's: unknown command, wrong arguments, count out of range, malformed) or not_issuing (the node could not issue keys).",
		[]string{"port", "reason"}, nil)
	keyConnectionsDesc = prometheus.NewDesc("shardkeeper_keyport_connections",
		"RESP connections open.", []string{"port"}, nil)
	keyConnectionsTotalDesc = prometheus.NewDesc("shardkeeper_keyport_connections_total",
		"RESP connections by result: accepted, or refused over --resp-max-clients.", []string{"port", "result"}, nil)
)

// keyPortCollector exposes the counts of the bound key ports (nil ones
// are skipped) as the shardkeeper_keyport_* metrics.
type keyPortCollector []*keyFrontend

func (c keyPortCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{keyRequestsDesc, keyKeysDesc, keyErrorsDesc, keyConnectionsDesc, keyConnectionsTotalDesc} {
		ch <- d
	}
}

func (c keyPortCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, k := range c {
		if k == nil {
			continue
		}
		n := k.metrics.Counts()
		counter(keyRequestsDesc, n.Requests, k.name)
		counter(keyKeysDesc, n.Keys, k.name)
		counter(keyErrorsDesc, n.RequestErrors, k.name, "request")
		counter(keyErrorsDesc, n.NotIssuing, k.name, "not_issuing")
		if k.name == "resp" {
			ch <- prometheus.MustNewConstMetric(keyConnectionsDesc, prometheus.GaugeValue, float64(n.Open), k.name)
			counter(keyConnectionsTotalDesc, n.Accepted, k.name, "accepted")
			counter(keyConnectionsTotalDesc, n.Refused, k.name, "refused")
		}
	}
}
