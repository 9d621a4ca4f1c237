package paths

import (
	"errors"
	"testing"

	"github.com/shardkeeper/shardkeeper/registry"
)

func TestLayoutMatchesShardingSphere(t *testing.T) {
	must := func(p string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const id = "8c7b2a3e-5d1f-4f6a-9c0e-2b7d8e9f0a1b"
	for got, want := range map[string]string{
		must(Online(Proxy, id)):                  "/nodes/compute_nodes/online/proxy/" + id,
		must(Online(JDBC, id)):                   "/nodes/compute_nodes/online/jdbc/" + id,
		must(Status(id)):                         "/nodes/compute_nodes/status/" + id,
		must(WorkerID(id)):                       "/nodes/compute_nodes/worker_id/" + id,
		must(Labels(id)):                         "/nodes/compute_nodes/labels/" + id,
		must(Reservation(1023)):                  "/reservation/worker_id/1023",
		must(Fence(0)):                           "/reservation/worker_id_fence/0",
		must(Table("db", "public", "t_order")):   "/metadata/db/schemas/public/tables/t_order",
		must(View("db", "public", "v")):          "/metadata/db/schemas/public/views/v",
		must(Unit("db", "ds_0")):                 "/metadata/db/data_sources/units/ds_0",
		must(GlobalRule("transaction")):          "/rules/transaction",
		ActiveVersion("/props"):                  "/props/active_version",
		Version("/props", 3):                     "/props/versions/3",
		must(ExclusiveOperation("lock_cluster")): "/exclusive_operation/lock_cluster",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
		if err := registry.ValidateKey(got); err != nil {
			t.Errorf("%s: %v", got, err)
		}
	}
}

func TestNamesThatWouldEscapeAreRefused(t *testing.T) {
	for _, name := range []string{"", "..", ".", "a/b", "../x", "a\x00", "x\n"} {
		if _, err := Status(name); !errors.Is(err, registry.ErrBadKey) {
			t.Errorf("Status(%q) = %v, want ErrBadKey", name, err)
		}
		if _, err := Table("db", "public", name); !errors.Is(err, registry.ErrBadKey) {
			t.Errorf("Table(%q) = %v, want ErrBadKey", name, err)
		}
		if _, err := Database(name); !errors.Is(err, registry.ErrBadKey) {
			t.Errorf("Database(%q) = %v, want ErrBadKey", name, err)
		}
	}
	if _, err := Online("admin", "i1"); !errors.Is(err, registry.ErrBadKey) {
		t.Errorf("Online with a bad type: %v", err)
	}
	for _, id := range []int{-1, 1024} {
		if _, err := Reservation(id); err == nil {
			t.Errorf("Reservation(%d) accepted", id)
		}
	}
}

func TestParseWorkerID(t *testing.T) {
	for name, want := range map[string]int{"0": 0, "17": 17, "1023": 1023} {
		if got, err := ParseWorkerID(name); err != nil || got != want {
			t.Errorf("ParseWorkerID(%q) = %d, %v", name, got, err)
		}
	}
	for _, name := range []string{"", "-1", "1024", "017", "+1", "x", "1.0"} {
		if _, err := ParseWorkerID(name); err == nil {
			t.Errorf("ParseWorkerID(%q) accepted", name)
		}
	}
}

func TestInstanceIDFrom(t *testing.T) {
	for key, want := range map[string][2]string{
		"/nodes/compute_nodes/online/proxy/i1": {"online", "i1"},
		"/nodes/compute_nodes/status/i2":       {"status", "i2"},
		"/nodes/compute_nodes/worker_id/i3":    {"worker_id", "i3"},
	} {
		kind, id, _, ok := InstanceIDFrom(key)
		if !ok || kind != want[0] || id != want[1] {
			t.Errorf("InstanceIDFrom(%s) = %s %s %v", key, kind, id, ok)
		}
	}
	for _, key := range []string{"/nodes/compute_nodes/online/admin/i1", "/nodes/compute_nodes/status", "/metadata/x", "/nodes/compute_nodes/status/i1/x"} {
		if _, _, _, ok := InstanceIDFrom(key); ok {
			t.Errorf("InstanceIDFrom(%s) matched", key)
		}
	}
}

func TestTriggersMatchShardingSphere(t *testing.T) {
	const id, task = "8c7b2a3e-5d1f-4f6a-9c0e-2b7d8e9f0a1b", "1f0e2d3c4b5a69788796a5b4c3d2e1f0"
	for _, c := range []struct {
		got  func() (string, error)
		want string
	}{
		{func() (string, error) { return ShowProcessListTrigger(id, task) }, "/nodes/compute_nodes/show_process_list_trigger/" + id + ":" + task},
		{func() (string, error) { return KillProcessTrigger(id, "p1") }, "/nodes/compute_nodes/kill_process_trigger/" + id + ":p1"},
		{func() (string, error) { return ExecutionTask(task) }, "/execution_nodes/" + task},
		{func() (string, error) { return ExecutionNode(task, id) }, "/execution_nodes/" + task + "/" + id},
	} {
		got, err := c.got()
		if err != nil || got != c.want {
			t.Errorf("got %s, %v; want %s", got, err, c.want)
		}
		if err := registry.ValidateKey(got); err != nil {
			t.Errorf("%s: %v", got, err)
		}
	}
	key, _ := ShowProcessListTrigger(id, task)
	if inst, tk, ok := ParseTrigger(registry.Base(key)); !ok || inst != id || tk != task {
		t.Errorf("ParseTrigger(%s) = %q %q %v", registry.Base(key), inst, tk, ok)
	}
	if inst, tk, ok := ParseTrigger("10.0.0.1@3307:a:b"); !ok || inst != "10.0.0.1@3307:a" || tk != "b" {
		t.Errorf("ParseTrigger splits at the last colon: %q %q %v", inst, tk, ok)
	}
	for _, name := range []string{"", ":", "i1:", ":t1", "i1"} {
		if _, _, ok := ParseTrigger(name); ok {
			t.Errorf("ParseTrigger(%q) accepted", name)
		}
	}
}

func TestTriggerNamesThatWouldEscapeAreRefused(t *testing.T) {
	for _, c := range [][2]string{{"", "t"}, {"i", ""}, {"..", "t"}, {"i", ".."}, {"a/b", "t"}, {"i", "../x"}, {"i", "t:u"}, {"i\n", "t"}, {"i", "t\x00"}} {
		if _, err := ShowProcessListTrigger(c[0], c[1]); !errors.Is(err, registry.ErrBadKey) {
			t.Errorf("ShowProcessListTrigger(%q, %q) = %v, want ErrBadKey", c[0], c[1], err)
		}
		if _, err := KillProcessTrigger(c[0], c[1]); !errors.Is(err, registry.ErrBadKey) {
			t.Errorf("KillProcessTrigger(%q, %q) = %v, want ErrBadKey", c[0], c[1], err)
		}
		if _, err := ExecutionNode(c[1], c[0]); !errors.Is(err, registry.ErrBadKey) {
			t.Errorf("ExecutionNode(%q, %q) = %v, want ErrBadKey", c[1], c[0], err)
		}
	}
}
