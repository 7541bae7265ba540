package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/caarlos0/env/v11"
	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// The deploy files start the binary built from this package: these tests
// read them as Docker Compose and Kubernetes would and check that they
// start a command the binary has, set only variables it reads (a misspelt
// name is silently ignored at run time), set the ones production needs,
// and probe the ports and paths the processes serve.

const deployDir = "../../deploy"

// productionEnv must reach every api and worker process (the binary
// refuses to start, or talks to the wrong place, without them).
var productionEnv = []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "IDENTITY_URL", "IDENTITY_SERVICE_TOKEN"}

// healthPaths are the probe endpoints of the api and worker processes.
var healthPaths = []string{"/healthz", "/readyz"}

// configVars is every environment variable the binary reads, with its
// default.
func configVars(t *testing.T) map[string]string {
	t.Helper()
	params, err := env.GetFieldParams(&Config{})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, p := range params {
		vars[p.Key] = p.DefaultValue
	}
	// The Go runtime's own: the garbage collector (setGCPercent).
	vars["GOGC"], vars["GOMEMLIMIT"] = "", ""
	return vars
}

// image is what deploy/Dockerfile's final stage runs: the entrypoint and
// the numeric user.
type image struct {
	entrypoint []string
	uid        int64
}

func readDockerfile(t *testing.T) image {
	t.Helper()
	f, err := os.Open(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var img image
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "ENTRYPOINT "); ok {
			img.entrypoint = nil
			if err := json.Unmarshal([]byte(rest), &img.entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT must be exec form (JSON): %q", line)
			}
		}
		if rest, ok := strings.CutPrefix(line, "USER "); ok {
			uid, _, _ := strings.Cut(rest, ":")
			if img.uid, err = strconv.ParseInt(uid, 10, 64); err != nil {
				t.Fatalf("USER must be numeric (runAsNonRoot checks it): %q", line)
			}
		}
	}
	if len(img.entrypoint) != 1 || img.uid == 0 {
		t.Fatalf("Dockerfile: entrypoint %q, user %d", img.entrypoint, img.uid)
	}
	return img
}

// checkRole fails unless args start one of the binary's roles.
func checkRole(t *testing.T, where string, args []string) string {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no command; the image's default is not spelled out", where)
		return ""
	}
	if _, ok := roles[args[0]]; !ok {
		t.Errorf("%s: %q is not a command of the binary", where, args[0])
	}
	return args[0]
}

func checkVars(t *testing.T, where string, known map[string]string, names []string) {
	t.Helper()
	for _, n := range names {
		if _, ok := known[n]; !ok {
			t.Errorf("%s sets %s, which the binary never reads", where, n)
		}
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return n
}

// listenVar is the variable that sets the address a role serves its
// health endpoints on.
var listenVar = map[string]string{"api": "SUITE_HTTP_ADDR", "worker": "SUITE_WORKER_HEALTH_ADDR"}

func TestDeployFilesMatchTheBinary(t *testing.T) {
	known := configVars(t)
	img := readDockerfile(t)

	t.Run("compose", func(t *testing.T) {
		// What `docker compose config` does: parse, interpolate, validate
		// against the Compose schema. Only the file's own defaults apply.
		opts, err := cli.NewProjectOptions([]string{filepath.Join(deployDir, "docker-compose.yml")},
			cli.WithWorkingDirectory(deployDir), cli.WithEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		project, err := opts.LoadProject(t.Context())
		if err != nil {
			t.Fatalf("docker-compose.yml does not load: %v", err)
		}
		started := map[string]bool{}
		for name, svc := range project.Services {
			if svc.Build == nil || !strings.HasSuffix(svc.Build.Dockerfile, "Dockerfile") {
				continue // not the suite's image
			}
			where := "compose service " + name
			role := checkRole(t, where, svc.Command)
			started[role] = true
			checkVars(t, where, known, keys(svc.Environment))
			if role != "api" && role != "worker" {
				continue
			}
			for _, v := range productionEnv {
				if val := svc.Environment[v]; val == nil || *val == "" {
					t.Errorf("%s: %s is not set", where, v)
				}
			}
			port := composePort(t, svc, role, known)
			checkComposeHealthcheck(t, where, svc.HealthCheck, img, port)
		}
		for _, role := range []string{"migrate", "api", "worker"} {
			if !started[role] {
				t.Errorf("no compose service runs %q", role)
			}
		}
	})

	t.Run("kubernetes", func(t *testing.T) {
		objects := readManifests(t)
		config := map[string]map[string]string{} // ConfigMap/Secret name → values
		for _, o := range objects {
			switch v := o.(type) {
			case *corev1.ConfigMap:
				config[v.Name] = v.Data
			case *corev1.Secret:
				config[v.Name] = v.StringData
			}
		}
		for name, values := range config {
			checkVars(t, "kubernetes config "+name, known, mapKeys(values))
		}
		started := map[string]bool{}
		for _, o := range objects {
			var pod *corev1.PodSpec
			var where string
			switch v := o.(type) {
			case *appsv1.Deployment:
				pod, where = &v.Spec.Template.Spec, "Deployment "+v.Name
			case *batchv1.Job:
				pod, where = &v.Spec.Template.Spec, "Job "+v.Name
			default:
				continue
			}
			for _, c := range pod.Containers {
				role := checkRole(t, where, append(slices.Clone(c.Command), c.Args...))
				started[role] = true
				env := checkEnvFrom(t, where, c, config, known)
				if sc := pod.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != img.uid {
					t.Errorf("%s: runAsUser must be the image's user %d", where, img.uid)
				}
				if role != "api" && role != "worker" {
					continue
				}
				for _, v := range productionEnv {
					if env[v] == "" && !strings.HasPrefix(env[v+"?"], "secret:") {
						t.Errorf("%s: %s is not set", where, v)
					}
				}
				varName := listenVar[role]
				addr := cmpOr(env[varName], known[varName])
				checkProbes(t, where, c, portOf(t, addr))
			}
		}
		for _, role := range []string{"migrate", "api", "worker"} {
			if !started[role] {
				t.Errorf("no Kubernetes workload runs %q", role)
			}
		}
	})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func keys(m types.MappingWithEquals) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// composePort is the port a compose service of the suite serves its health
// endpoints on, from its environment or the binary's default.
func composePort(t *testing.T, svc types.ServiceConfig, role string, known map[string]string) int {
	t.Helper()
	name := listenVar[role]
	addr := known[name]
	if v := svc.Environment[name]; v != nil {
		addr = *v
	}
	port := portOf(t, addr)
	for _, p := range svc.Ports {
		if p.Target != uint32(port) {
			t.Errorf("compose service %s publishes container port %d; it listens on %d", svc.Name, p.Target, port)
		}
	}
	return port
}

// checkComposeHealthcheck: the distroless image has no shell, so the check
// must run the binary's own healthcheck against a served path and port.
func checkComposeHealthcheck(t *testing.T, where string, hc *types.HealthCheckConfig, img image, port int) {
	t.Helper()
	if hc == nil || len(hc.Test) != 4 || hc.Test[0] != "CMD" {
		t.Errorf("%s: the healthcheck must be [CMD, %s, healthcheck, URL], got %v", where, img.entrypoint[0], hc)
		return
	}
	if hc.Test[1] != img.entrypoint[0] || hc.Test[2] != "healthcheck" {
		t.Errorf("%s: healthcheck runs %q, the image's binary is %s", where, hc.Test[1:3], img.entrypoint[0])
	}
	u, err := url.Parse(hc.Test[3])
	if err != nil || u.Port() != strconv.Itoa(port) || !slices.Contains(healthPaths, u.Path) {
		t.Errorf("%s: healthcheck URL %q must be one of %v on port %d", where, hc.Test[3], healthPaths, port)
	}
}

// checkEnvFrom returns the container's environment as Kubernetes assembles
// it (config map values; secret keys marked "secret:") and fails on a
// reference to a config map or secret that is not in the manifests.
func checkEnvFrom(t *testing.T, where string, c corev1.Container, config map[string]map[string]string, known map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		var name string
		secret := from.SecretRef != nil
		switch {
		case from.ConfigMapRef != nil:
			name = from.ConfigMapRef.Name
		case secret:
			name = from.SecretRef.Name
		}
		values, ok := config[name]
		if !ok {
			t.Errorf("%s: envFrom %q is not defined in deploy/k8s", where, name)
		}
		for k, v := range values {
			if secret {
				env[k+"?"] = "secret:" + name // set at deploy time
				continue
			}
			env[k] = v
		}
	}
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
		env[e.Name] = e.Value
	}
	checkVars(t, where, known, names)
	return env
}

func checkProbes(t *testing.T, where string, c corev1.Container, port int) {
	t.Helper()
	named := map[string]int32{}
	for _, p := range c.Ports {
		named[p.Name] = p.ContainerPort
		if p.ContainerPort != int32(port) {
			t.Errorf("%s: containerPort %d, the process listens on %d", where, p.ContainerPort, port)
		}
	}
	for kind, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", where, kind)
			continue
		}
		got := probe.HTTPGet.Port.IntVal
		if probe.HTTPGet.Port.StrVal != "" {
			got = named[probe.HTTPGet.Port.StrVal]
		}
		if got != int32(port) || !slices.Contains(healthPaths, probe.HTTPGet.Path) {
			t.Errorf("%s: %s probe %s on port %d; the process serves %v on %d", where, kind, probe.HTTPGet.Path, got, healthPaths, port)
		}
	}
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("%s: readiness must use /readyz (it checks the database and Temporal)", where)
	}
}

// readManifests decodes every object of the kustomization (and the example
// secret) into its Kubernetes API type, rejecting unknown or mistyped
// fields: the schema check kubectl's server-side validation would make.
func readManifests(t *testing.T) []any {
	t.Helper()
	dir := filepath.Join(deployDir, "k8s")
	var kust struct {
		Resources []string `json:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &kust); err != nil {
		t.Fatal(err)
	}
	var objects []any
	for _, file := range append(kust.Resources, "secret.example.yaml") {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("kustomization resource %s: %v", file, err)
			continue
		}
		for i, doc := range splitYAML(b) {
			o, err := decodeObject(doc)
			if err != nil {
				t.Errorf("%s document %d: %v", file, i+1, err)
				continue
			}
			objects = append(objects, o)
		}
	}
	return objects
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range docSeparator.Split(string(b), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func stripComments(s string) string {
	var out bytes.Buffer
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			out.WriteString(line)
		}
	}
	return out.String()
}

func decodeObject(doc []byte) (any, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	var o any
	switch meta.APIVersion + " " + meta.Kind {
	case "v1 Namespace":
		o = &corev1.Namespace{}
	case "v1 ConfigMap":
		o = &corev1.ConfigMap{}
	case "v1 Secret":
		o = &corev1.Secret{}
	case "v1 Service":
		o = &corev1.Service{}
	case "apps/v1 Deployment":
		o = &appsv1.Deployment{}
	case "batch/v1 Job":
		o = &batchv1.Job{}
	case "policy/v1 PodDisruptionBudget":
		o = &policyv1.PodDisruptionBudget{}
	default:
		return nil, fmt.Errorf("unexpected object %s %s (add its type here)", meta.APIVersion, meta.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, o); err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Kind, err)
	}
	return o, nil
}
