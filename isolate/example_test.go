package isolate_test

import (
	"fmt"

	"github.com/spotter-harness/spotter/isolate"
)

// --isolate=auto picks containerd when its daemon's socket exists, and the
// local development backend otherwise.
func ExampleChoose() {
	for _, name := range []string{"local", "containerd", "auto"} {
		b, err := isolate.Choose(name, "/nonexistent/containerd.sock")
		fmt.Println(name, "→", b, err)
	}
	_, err := isolate.Choose("docker", "")
	fmt.Println(err)
	// Output:
	// local → local <nil>
	// containerd → containerd <nil>
	// auto → local <nil>
	// isolate "docker": want local, containerd or auto
}
