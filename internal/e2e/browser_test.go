package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// EnvScreenshot names where TestStatusPage saves its desktop screenshot
// (default: the test's temporary directory). The README's
// docs/status-page.png comes from
// SHARDKEEPER_SCREENSHOT=$PWD/docs/status-page.png make test.
const EnvScreenshot = "SHARDKEEPER_SCREENSHOT"

// chromium finds Debian's chromium (scripts/servers.sh installs it); it
// fails under SHARDKEEPER_REQUIRE_SERVERS=1 and skips otherwise.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium not installed: run `make test` (scripts/servers.sh installs it)"
	if os.Getenv(testenv.EnvRequireServers) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestStatusPage loads the status page of a three-node cluster on real
// etcd in headless Chromium, on a laptop-sized and a phone-sized window:
// the nodes table has the three nodes, the worker-id map has 1024 cells
// with the three held ids, a tap on a cell shows its holder, and the page
// follows a change (a node disabled) live.
func TestStatusPage(t *testing.T) {
	exe := chromium(t)
	conf := writeConf(t, "etcd", strings.Join(testenv.EtcdEndpoints(t), ","))
	var procs []*proc
	for i := 1; i <= 3; i++ {
		procs = append(procs, startServe(t, conf, fmt.Sprintf("page-node-%d", i), 3300+i))
	}
	for _, p := range procs {
		testenv.Eventually(t, p.id+" sees 3 nodes", func() bool { return len(nodes(t, p)) == 3 })
	}
	var self nodeRow
	call(t, "GET", procs[0].url+"/api/v1/nodes/self", "", &self)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	page := procs[0].url + "/"
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="1"]`)),
	)
	if err != nil {
		t.Fatalf("status page: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#nodes tbody tr").length === 3 && document.querySelector("#map").dataset.held === "3"`,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("the page never showed 3 nodes and 3 held worker ids: %v", err)
	}
	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	rows := eval(`document.querySelectorAll("#nodes tbody tr").length`)
	cells := eval(`document.querySelectorAll("#map > div").length`)
	held := eval(`document.querySelectorAll("#map > div.held, #map > div.self").length`)
	selfCell := eval(fmt.Sprintf(`document.querySelectorAll("#map > div")[%d].className`, self.WorkerID))
	if rows != 3.0 || cells != 1024.0 || held != 3.0 || !strings.Contains(fmt.Sprint(selfCell), "self") {
		t.Fatalf("page shows %v nodes, %v cells, %v held; this node's cell %q", rows, cells, held, selfCell)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#map > div[data-w="%d"]`, self.WorkerID)))); err != nil {
		t.Fatal(err)
	}
	cellText, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#cell`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cellText, "held by "+procs[0].id) || !strings.Contains(cellText, "reserved until") {
		t.Fatalf("cell details: %q", cellText)
	}

	// Live update: disable node 3 through the API; the page shows it.
	var row nodeRow
	if code := call(t, "PUT", procs[1].url+"/api/v1/nodes/"+procs[2].id+"/state", `{"state":"DISABLE"}`, &row); code != 200 {
		t.Fatalf("DISABLE: %d", code)
	}
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`Array.from(document.querySelectorAll("#nodes tbody tr")).some(r => r.dataset.id === %q && r.textContent.includes("CIRCUIT_BREAK"))`, procs[2].id),
		chromedp.WithPollingTimeout(15*time.Second)))
	if err != nil {
		t.Fatalf("the page did not show node 3 disabled: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := os.Getenv(EnvScreenshot)
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "status-page.png")
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))

	// Phone: nothing overflows the page sideways (the nodes table scrolls
	// in its own box) and the map still has its 1024 cells.
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile),
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="1"]`)),
	)
	if err != nil {
		t.Fatalf("phone: %v", err)
	}
	overflow := eval(`document.documentElement.scrollWidth > window.innerWidth + 1`)
	cells = eval(`document.querySelectorAll("#map > div").length`)
	if overflow != false || cells != 1024.0 {
		t.Fatalf("phone: overflow %v, %v cells", overflow, cells)
	}
}
