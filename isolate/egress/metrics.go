package egress

import "expvar"

var (
	metricAllowed = expvar.NewInt("spotter_egress_allowed")
	metricRefused = expvar.NewInt("spotter_egress_refused")
)
