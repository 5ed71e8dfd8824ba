package deploycheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/purerdma/rdma/cmd/rdma_exporter/internal/exporter"
)

// Kubernetes objects, the fields checked here.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec podSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type podSpec struct {
	HostNetwork     bool             `json:"hostNetwork"`
	HostPID         bool             `json:"hostPID"`
	SecurityContext *securityContext `json:"securityContext"`
	Containers      []container      `json:"containers"`
	InitContainers  []container      `json:"initContainers"`
	Volumes         []struct {
		Name     string `json:"name"`
		HostPath *struct {
			Path string `json:"path"`
		} `json:"hostPath"`
		ConfigMap *struct {
			Name string `json:"name"`
		} `json:"configMap"`
	} `json:"volumes"`
	Tolerations []map[string]any `json:"tolerations"`
}

type securityContext struct {
	RunAsNonRoot             *bool `json:"runAsNonRoot"`
	RunAsUser                *int  `json:"runAsUser"`
	Privileged               *bool `json:"privileged"`
	AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
	Capabilities             *struct {
		Add  []string `json:"add"`
		Drop []string `json:"drop"`
	} `json:"capabilities"`
}

type probe struct {
	HTTPGet *struct {
		Path string `json:"path"`
		Port any    `json:"port"`
	} `json:"httpGet"`
	TimeoutSeconds int `json:"timeoutSeconds"`
}

type container struct {
	Name            string           `json:"name"`
	Args            []string         `json:"args"`
	Command         []string         `json:"command"`
	SecurityContext *securityContext `json:"securityContext"`
	Ports           []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	Resources struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	} `json:"resources"`
	LivenessProbe  *probe `json:"livenessProbe"`
	ReadinessProbe *probe `json:"readinessProbe"`
	VolumeMounts   []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		ReadOnly  bool   `json:"readOnly"`
	} `json:"volumeMounts"`
}

// loadYAML returns the documents of a manifest as generic values with
// string keys (as JSON has them).
func loadYAML(t *testing.T, rel string) []any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, rel)))
	var docs []any
	for {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if v != nil {
			docs = append(docs, stringKeys(v))
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no documents", rel)
	}
	return docs
}

func stringKeys(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := map[string]any{}
		for k, e := range v {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = stringKeys(e)
		}
	}
	return v
}

func decode(t *testing.T, rel string, v any) object {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var o object
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return o
}

func daemonSet(t *testing.T, rel string) (object, any) {
	t.Helper()
	docs := loadYAML(t, rel)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want the DaemonSet alone", rel, len(docs))
	}
	ds := decode(t, rel, docs[0])
	if ds.Kind != "DaemonSet" || ds.APIVersion != "apps/v1" {
		t.Fatalf("%s: %s %s, want an apps/v1 DaemonSet", rel, ds.APIVersion, ds.Kind)
	}
	if len(ds.Spec.Template.Spec.Containers) != 1 || len(ds.Spec.Template.Spec.InitContainers) != 0 {
		t.Fatalf("%s: want one container", rel)
	}
	return ds, docs[0]
}

// quantity parses the Kubernetes quantities the manifests use (123m, 64Mi,
// 1Gi, 2) into thousandths or bytes.
func quantity(s string) (float64, error) {
	for suffix, mul := range map[string]float64{"m": 1e-3, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			var f float64
			if _, err := fmt.Sscanf(n, "%g", &f); err != nil {
				return 0, fmt.Errorf("quantity %q: %v", s, err)
			}
			return f * mul, nil
		}
	}
	var f float64
	if _, err := fmt.Sscanf(s, "%g", &f); err != nil {
		return 0, fmt.Errorf("quantity %q: %v", s, err)
	}
	return f, nil
}

// checkCommon: what both DaemonSets must have: the host's /sys read-only
// at /host/sys and --path.sysfs naming it, hostNetwork, probes on / with a
// timeout, requests and limits, a read-only root, no privilege escalation,
// every capability dropped, tolerations for every taint, flags the
// exporter knows.
func checkCommon(t *testing.T, rel string, ds object) {
	t.Helper()
	ps := ds.Spec.Template.Spec
	c := ps.Containers[0]
	if !ps.HostNetwork {
		t.Errorf("%s: no hostNetwork (RDMA netlink answers in the host's network namespace)", rel)
	}
	if !reflect.DeepEqual(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Metadata.Labels) {
		t.Errorf("%s: selector %v does not match the pod labels %v", rel, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Metadata.Labels)
	}
	if !slices.Contains(c.Args, "--path.sysfs=/host/sys") {
		t.Errorf("%s: args %q lack --path.sysfs=/host/sys", rel, c.Args)
	}
	sys := false
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/host/sys" {
			continue
		}
		sys = m.ReadOnly
		for _, v := range ps.Volumes {
			if v.Name == m.Name && (v.HostPath == nil || v.HostPath.Path != "/sys") {
				sys = false
			}
		}
	}
	if !sys {
		t.Errorf("%s: want the host's /sys mounted read-only at /host/sys", rel)
	}
	for name, p := range map[string]*probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("%s: no %s probe with httpGet", rel, name)
		case p.HTTPGet.Path != "/" || p.TimeoutSeconds <= 0:
			t.Errorf("%s: %s probe on %q with timeout %ds, want / with a timeout", rel, name, p.HTTPGet.Path, p.TimeoutSeconds)
		case fmt.Sprint(p.HTTPGet.Port) != "metrics" && fmt.Sprint(p.HTTPGet.Port) != "9915":
			t.Errorf("%s: %s probe on port %v, want the metrics port", rel, name, p.HTTPGet.Port)
		}
	}
	for _, r := range []string{"cpu", "memory"} {
		req, err1 := quantity(c.Resources.Requests[r])
		lim, err2 := quantity(c.Resources.Limits[r])
		if c.Resources.Requests[r] == "" || c.Resources.Limits[r] == "" || err1 != nil || err2 != nil || req <= 0 || req > lim {
			t.Errorf("%s: %s request %q and limit %q: want both, request <= limit (%v, %v)", rel, r, c.Resources.Requests[r], c.Resources.Limits[r], err1, err2)
		}
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatalf("%s: container has no securityContext", rel)
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("%s: privileged", rel)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: want allowPrivilegeEscalation: false", rel)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: want readOnlyRootFilesystem: true", rel)
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}):
		t.Errorf("%s: want capabilities drop [ALL]", rel)
	}
	all := false
	for _, tol := range ps.Tolerations {
		if tol["operator"] == "Exists" && (tol["key"] == nil || tol["key"] == "") && (tol["effect"] == nil || tol["effect"] == "") {
			all = true
		}
	}
	if !all {
		t.Errorf("%s: tolerations %v: want one that tolerates every taint (operator: Exists, no key, no effect)", rel, ps.Tolerations)
	}
	if len(c.Command) != 0 {
		t.Errorf("%s: command %q overrides the image's entrypoint", rel, c.Command)
	}
	checkFlags(t, rel, c.Args)
}

// checkFlags: the exporter's own flag parsing accepts args. Main parses
// the flags first and then refuses a stray argument (exit status 2,
// kingpin's "error: unexpected ARG"), so nothing is started.
func checkFlags(t *testing.T, rel string, args []string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := exporter.Main(append(slices.Clone(args), "deploycheck-stray-argument"), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "error: unexpected deploycheck-stray-argument") {
		first, _, _ := strings.Cut(stderr.String(), "\n")
		t.Errorf("%s: the exporter does not accept args %q: exit status %d, %s", rel, args, code, first)
	}
}

func mountedAt(c container, dir string) (volume string, ok bool) {
	for _, m := range c.VolumeMounts {
		if m.MountPath == dir {
			return m.Name, true
		}
	}
	return "", false
}

func hostPathOf(ps podSpec, volume string) string {
	for _, v := range ps.Volumes {
		if v.Name == volume && v.HostPath != nil {
			return v.HostPath.Path
		}
	}
	return ""
}

// TestManifests: the default DaemonSet runs without privilege; the flows
// variant adds CAP_NET_RAW (as root, which Kubernetes needs for a
// capability to take effect), /dev/infiniband and the flows config, whose
// flows the exporter's parser accepts.
func TestManifests(t *testing.T) {
	const def, flows, cm = "deploy/daemonset.yaml", "deploy/flows/daemonset.yaml", "deploy/flows/configmap.yaml"
	d, _ := daemonSet(t, def)
	checkCommon(t, def, d)
	ps, c := d.Spec.Template.Spec, d.Spec.Template.Spec.Containers[0]
	for _, sc := range []*securityContext{ps.SecurityContext, c.SecurityContext} {
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
			t.Errorf("%s: want runAsNonRoot: true and a non-zero runAsUser in the pod's and the container's securityContext", def)
		}
	}
	if caps := c.SecurityContext.Capabilities; caps != nil && len(caps.Add) > 0 {
		t.Errorf("%s: adds capabilities %q", def, caps.Add)
	}
	for _, v := range ps.Volumes {
		if v.HostPath != nil && (v.HostPath.Path == "/dev" || strings.HasPrefix(v.HostPath.Path, "/dev/")) {
			t.Errorf("%s: mounts the host's %s", def, v.HostPath.Path)
		}
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/dev" || strings.HasPrefix(m.MountPath, "/dev/") {
			t.Errorf("%s: mounts something at %s", def, m.MountPath)
		}
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--config.flows") }) {
		t.Errorf("%s: has --config.flows", def)
	}
	if ps.HostPID {
		t.Errorf("%s: hostPID (only the per-QP-counter series need it; the manifest says how to opt in)", def)
	}

	// The image's user is the default DaemonSet's.
	if want := fmt.Sprintf("USER %d:", *c.SecurityContext.RunAsUser); !strings.Contains(string(readFile(t, "deploy/Dockerfile")), "\n"+want) {
		t.Errorf("deploy/Dockerfile: no %q line: the image should run as the DaemonSet's user", want)
	}

	f, _ := daemonSet(t, flows)
	checkCommon(t, flows, f)
	fps, fc := f.Spec.Template.Spec, f.Spec.Template.Spec.Containers[0]
	if caps := fc.SecurityContext.Capabilities; caps == nil || !slices.Equal(caps.Add, []string{"NET_RAW"}) {
		t.Errorf("%s: want capabilities add [NET_RAW] (RAW_PACKET QPs and flow steering), nothing else", flows)
	}
	if vol, ok := mountedAt(fc, "/dev/infiniband"); !ok || hostPathOf(fps, vol) != "/dev/infiniband" {
		t.Errorf("%s: want the host's /dev/infiniband at /dev/infiniband", flows)
	}
	var flowsArg string
	for _, a := range fc.Args {
		if v, ok := strings.CutPrefix(a, "--config.flows="); ok {
			flowsArg = v
		}
	}
	if flowsArg == "" {
		t.Fatalf("%s: no --config.flows=FILE in %q", flows, fc.Args)
	}
	vol, ok := mountedAt(fc, filepath.Dir(flowsArg))
	var cmName string
	for _, v := range fps.Volumes {
		if v.Name == vol && ok && v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	cmDocs := loadYAML(t, cm)
	if len(cmDocs) != 1 {
		t.Fatalf("%s: %d documents", cm, len(cmDocs))
	}
	cmo := decode(t, cm, cmDocs[0])
	if cmo.Kind != "ConfigMap" || cmName == "" || cmo.Metadata.Name != cmName {
		t.Fatalf("%s: --config.flows=%s is not in a mounted ConfigMap named as %s's (%q)", flows, flowsArg, cm, cmo.Metadata.Name)
	}
	js, ok := cmo.Data[filepath.Base(flowsArg)]
	if !ok {
		t.Fatalf("%s: no key %s for --config.flows=%s", cm, filepath.Base(flowsArg), flowsArg)
	}
	cfgs, err := exporter.ReadFlows(strings.NewReader(js))
	if err != nil || len(cfgs) == 0 {
		t.Errorf("%s: the exporter refuses %s: %v", cm, filepath.Base(flowsArg), err)
	}
}

// TestFlowsManifestDiffersOnlyInFlows: deploy/flows/daemonset.yaml is
// deploy/daemonset.yaml plus what flows need, and nothing else: without
// the user, the capability, /dev/infiniband, the flows volume and
// --config.flows, the two are the same object. (Comments aside, so a
// change to one is a change to the other.)
func TestFlowsManifestDiffersOnlyInFlows(t *testing.T) {
	const def, flows = "deploy/daemonset.yaml", "deploy/flows/daemonset.yaml"
	_, d := daemonSet(t, def)
	_, f := daemonSet(t, flows)
	get := func(v any, keys ...any) any {
		for _, k := range keys {
			switch k := k.(type) {
			case string:
				v = v.(map[string]any)[k]
			case int:
				v = v.([]any)[k]
			}
		}
		return v
	}
	pod := func(v any) map[string]any { return get(v, "spec", "template", "spec").(map[string]any) }
	ctr := func(v any) map[string]any { return get(pod(v), "containers", 0).(map[string]any) }

	// Undo the flows variant's additions.
	pod(f)["securityContext"] = pod(d)["securityContext"]
	ctr(f)["securityContext"] = ctr(d)["securityContext"]
	var args []any
	for _, a := range ctr(f)["args"].([]any) {
		if !strings.HasPrefix(fmt.Sprint(a), "--config.flows=") {
			args = append(args, a)
		}
	}
	ctr(f)["args"] = args
	drop := func(list []any, names ...string) []any {
		return slices.DeleteFunc(list, func(e any) bool { return slices.Contains(names, fmt.Sprint(e.(map[string]any)["name"])) })
	}
	ctr(f)["volumeMounts"] = drop(ctr(f)["volumeMounts"].([]any), "infiniband", "flows")
	pod(f)["volumes"] = drop(pod(f)["volumes"].([]any), "infiniband", "flows")

	if !reflect.DeepEqual(d, f) {
		db, _ := json.MarshalIndent(d, "", "  ")
		fb, _ := json.MarshalIndent(f, "", "  ")
		t.Errorf("%s, less what flows need, differs from %s:\n%s\nversus\n%s", flows, def, fb, db)
	}
}

// TestServiceMonitor: the optional Service selects the DaemonSet's pods on
// its metrics port, and the ServiceMonitor selects the Service.
func TestServiceMonitor(t *testing.T) {
	const rel = "deploy/servicemonitor.yaml"
	d, _ := daemonSet(t, "deploy/daemonset.yaml")
	docs := loadYAML(t, rel)
	kinds := map[string]map[string]any{}
	for _, doc := range docs {
		m := doc.(map[string]any)
		kinds[fmt.Sprint(m["kind"])] = m
	}
	svc, sm := kinds["Service"], kinds["ServiceMonitor"]
	if svc == nil || sm == nil || len(docs) != 2 {
		t.Fatalf("%s: want a Service and a ServiceMonitor, got %d documents", rel, len(docs))
	}
	spec := svc["spec"].(map[string]any)
	sel := map[string]string{}
	for k, v := range spec["selector"].(map[string]any) {
		sel[k] = fmt.Sprint(v)
	}
	if !reflect.DeepEqual(sel, d.Spec.Template.Metadata.Labels) {
		t.Errorf("%s: Service selector %v, pod labels %v", rel, sel, d.Spec.Template.Metadata.Labels)
	}
	port := spec["ports"].([]any)[0].(map[string]any)
	if fmt.Sprint(port["port"]) != fmt.Sprint(d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort) {
		t.Errorf("%s: Service port %v, container port %d", rel, port["port"], d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort)
	}
	smSel := sm["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
	labels := svc["metadata"].(map[string]any)["labels"].(map[string]any)
	for k, v := range smSel {
		if labels[k] != v {
			t.Errorf("%s: ServiceMonitor selects %s=%v, the Service has %v", rel, k, v, labels)
		}
	}
	ep := sm["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	if ep["port"] != port["name"] {
		t.Errorf("%s: ServiceMonitor scrapes port %v, the Service's is %v", rel, ep["port"], port["name"])
	}
}
