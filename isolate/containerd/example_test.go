package containerd_test

import (
	"context"
	"fmt"
	"log"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// One session in a container: only the app under test on the host's
// loopback can be reached, through the egress proxy.
//
// This example needs containerd's daemon and a Spotter binary that runs
// "spotter agent", so it has no Output comment and go test only compiles
// it; the integration tests (SPOTTER_INTEGRATION=1) run the same path.
func ExampleRuntime_Start() {
	ctx := context.Background()
	rt, err := containerd.New(ctx, containerd.Config{}) // removes leftovers of crashed runs
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	sb, err := rt.Start(ctx, isolate.Config{
		Name:       "checkout-test",
		Egress:     egress.Policy{Allow: []string{"127.0.0.1:8080"}},
		OnDecision: func(d egress.Decision) { fmt.Println(d.Host, d.Allowed, d.Reason) },
		MemoryMiB:  768,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(ctx)

	d, err := isolate.Open(ctx, sb, cdp.Config{Viewport: screen.Size{W: 1280, H: 800}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close(ctx)
	shot, err := d.Capture(ctx, screen.CaptureOptions{})
	if err != nil {
		log.Fatal(err) // wraps isolate.ErrOOM if the page outgrew 768 MiB
	}
	fmt.Println(shot.Frame.Sent)
}
