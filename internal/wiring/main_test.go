package wiring

import (
	"os"
	"testing"

	"github.com/spotter-harness/spotter/isolate/isolatetest"
)

// The test binary is also the agent of the sandboxes its tests start
// ("agent ...").
func TestMain(m *testing.M) {
	isolatetest.AgentMain()
	os.Exit(m.Run())
}
