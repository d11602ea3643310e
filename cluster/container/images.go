package container

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/locktest/locktest/cluster"
)

// Image is a container image built on this machine from the binaries of
// its installed (Debian) packages: no registry, no base image. It holds
// each binary at the path it has on the host, with every shared library
// ldd names for it, so that a node's Spec runs unchanged in a container.
// A new server kind is one entry in images.
type Image struct {
	// Name is the repository, e.g. "locktest/redis".
	Name string
	// Binaries are the programs in the image, looked up in PATH (or
	// absolute); symbolic links are kept, since a program may act on the
	// name it is called by (redis-sentinel is a link to redis-server's
	// binary). The first one is what CheckImages says is missing.
	Binaries []string
	// Trees are directories copied whole (a runtime's support files),
	// with the libraries of the executables and shared objects in them.
	Trees []string
	// MoreTrees, if set, finds further trees on this machine at build time
	// (a runtime whose location depends on the installed version).
	MoreTrees func() ([]string, error)
}

// SelfPath is where every image holds this program: in a docker-compose
// topology it is the entry point of each server container (`locktest
// node-exec`, see compose.go), and the locktest container's command.
const SelfPath = "/usr/local/bin/locktest"

// ImageTag is the tag of every locally built image.
const ImageTag = "local"

// LabelImage marks the images locktest built, so `docker images` can list them.
const LabelImage = "io.locktest.image"

// images are the server images; the binary a node runs chooses its image.
// The clients (redis-cli, etcdctl) are there for docker-compose.yml's
// healthchecks: an image FROM scratch has no shell to probe a server with.
var images = []Image{
	{Name: "locktest/redis", Binaries: []string{"redis-server", "redis-sentinel", "redis-cli"}},
	{Name: "locktest/etcd", Binaries: []string{"etcd", "etcdctl"}},
	// PostgreSQL's server with its modules (plpgsql), its share files and
	// the time zones it reads at start-up; initdb runs on the host.
	{Name: "locktest/postgres", Binaries: []string{"postgres", "initdb"},
		Trees: []string{"/usr/lib/postgresql", "/usr/share/postgresql", "/usr/share/zoneinfo"}},
	// ZooKeeper: the Java runtime java belongs to, and the jars of
	// Debian's zookeeper package (its manifest names the others there).
	{Name: "locktest/zookeeper", Binaries: []string{"java"}, Trees: []string{"/usr/share/java"}, MoreTrees: javaTrees},
}

// javaTrees is the runtime behind the java in PATH: its bin, lib and
// conf, and the /etc directory its conf links into.
func javaTrees() ([]string, error) {
	java, err := cluster.LookBinary("java", "")
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		return nil, err
	}
	home := filepath.Dir(filepath.Dir(real))
	trees := []string{filepath.Join(home, "lib"), filepath.Join(home, "conf")}
	etc, _ := filepath.Glob("/etc/java-*")
	return append(trees, etc...), nil
}

// The coordinator of docker-compose.yml holds every server binary too: it
// writes each node's Spec with the paths it finds in its own PATH, which
// are the paths the server images have.
func init() {
	var all []string
	for _, img := range images {
		all = append(all, img.Binaries...)
	}
	images = append(images, Image{Name: "locktest/locktest", Binaries: all})
}

// Images returns the registered server images.
func Images() []Image { return slices.Clone(images) }

// Ref is the image's name:tag.
func (i Image) Ref() string { return i.Name + ":" + ImageTag }

// ImageFor returns the image holding the binary at path (or of that name).
func ImageFor(path string) (Image, error) {
	base := filepath.Base(path)
	for _, img := range images {
		for _, b := range img.Binaries {
			if b == base || b == path {
				return img, nil
			}
		}
	}
	return Image{}, fmt.Errorf("--backend docker: no image runs %s, so this design runs on --backend local only (images: %v)", base, imageNames())
}

func imageNames() []string {
	var out []string
	for _, i := range images {
		out = append(out, i.Name)
	}
	return out
}

// CheckImages says which image is missing for the given binaries, with
// the command that builds it.
func CheckImages(ctx context.Context, binaries []string) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	seen := map[string]bool{}
	sort.Strings(binaries)
	for _, b := range binaries {
		img, err := ImageFor(b)
		if err != nil {
			return err
		}
		if seen[img.Name] {
			continue
		}
		seen[img.Name] = true
		if _, err := cli.ImageInspect(ctx, img.Ref()); err != nil {
			return &MissingImageError{Image: img.Ref()}
		}
	}
	return nil
}

// BuildImages builds the named images (all when names is empty) from this
// machine's binaries, printing one line per image to out.
func BuildImages(ctx context.Context, names []string, out io.Writer) error {
	var todo []Image
	for _, img := range images {
		if len(names) == 0 || slices.Contains(names, img.Name) || slices.Contains(names, strings.TrimPrefix(img.Name, "locktest/")) {
			todo = append(todo, img)
		}
	}
	if len(todo) < len(names) {
		return fmt.Errorf("unknown image in %v (valid: %v)", names, imageNames())
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	for _, img := range todo {
		start := time.Now()
		files, err := img.files()
		if err != nil {
			return fmt.Errorf("image %s: %w", img.Name, err)
		}
		var buf bytes.Buffer
		size, err := buildContext(&buf, files)
		if err != nil {
			return fmt.Errorf("image %s: %w", img.Name, err)
		}
		var old string
		if prev, err := cli.ImageInspect(ctx, img.Ref()); err == nil {
			old = prev.ID
		}
		res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{img.Ref()}, Remove: true,
			ForceRemove: true, Labels: map[string]string{LabelImage: img.Name}})
		if err != nil {
			return fmt.Errorf("build image %s: %w", img.Name, err)
		}
		err = buildResult(res.Body)
		res.Body.Close()
		if err != nil {
			return fmt.Errorf("build image %s: %w", img.Name, err)
		}
		// The build moved the tag: the previous build would stay behind,
		// untagged, on every rebuild. A container still using it keeps it.
		if now, err := cli.ImageInspect(ctx, img.Ref()); err == nil && old != "" && now.ID != old {
			_, _ = cli.ImageRemove(ctx, old, client.ImageRemoveOptions{PruneChildren: true})
		}
		fmt.Fprintf(out, "built %s (%d files, %.1f MB) in %.1fs\n", img.Ref(), len(files), float64(size)/1e6, time.Since(start).Seconds())
	}
	return nil
}

// buildResult reads the engine's build stream and returns the error it
// reports, if any.
func buildResult(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	var last string
	for sc.Scan() {
		var m struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			if m.Error != "" {
				return errors.New(strings.TrimSpace(m.Error))
			}
			if s := strings.TrimSpace(m.Stream); s != "" {
				last = s
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read build output: %w (last: %s)", err, last)
	}
	return nil
}

// file is one entry of an image: a regular file copied from the host, or
// a symbolic link.
type file struct {
	path string // in the image, the same as on the host unless from is set
	link string // target of a symbolic link
	from string // the host file, when its path in the image differs
}

// files lists what the image holds: the binaries (links kept), the trees,
// and every shared library of every executable among them.
func (img Image) files() ([]file, error) {
	seen := map[string]bool{}
	var out []file
	var execs, treeObjs []string
	add := func(f file) {
		if !seen[f.path] {
			seen[f.path] = true
			out = append(out, f)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	add(file{path: SelfPath, from: self})
	execs = append(execs, self)
	for _, b := range img.Binaries {
		p, err := cluster.LookBinary(b, "")
		if err != nil {
			return nil, fmt.Errorf("%s is not installed on this machine (the image is built from it)", b)
		}
		// Follow the chain of links, keeping each one.
		for range 10 {
			target, err := os.Readlink(p)
			if err != nil {
				break
			}
			add(file{path: p, link: target})
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			p = target
		}
		add(file{path: p})
		execs = append(execs, p)
	}
	trees := img.Trees
	if img.MoreTrees != nil {
		more, err := img.MoreTrees()
		if err != nil {
			return nil, err
		}
		trees = append(slices.Clone(trees), more...)
	}
	for _, t := range trees {
		err := filepath.Walk(t, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			switch {
			case info.Mode()&os.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				add(file{path: p, link: target})
			case info.Mode().IsRegular():
				add(file{path: p})
				if info.Mode()&0o111 != 0 || strings.HasSuffix(p, ".so") {
					treeObjs = append(treeObjs, p)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", t, err)
		}
	}
	for i, e := range append(execs, treeObjs...) {
		// A runtime's own objects may name each other without a path the
		// loader knows (libjvm.so, found once the runtime runs): only the
		// binaries must resolve entirely.
		libs, err := sharedLibraries(e, i < len(execs))
		if err != nil {
			return nil, err
		}
		for _, l := range libs {
			add(file{path: l})
		}
	}
	return out, nil
}

var lddLine = regexp.MustCompile(`(?:=>\s*)?(/\S+)\s+\(0x`)

// sharedLibraries lists the libraries (and the loader) ldd names for an
// executable; none for a static one or a script.
func sharedLibraries(path string, strict bool) ([]string, error) {
	out, err := exec.Command("ldd", path).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("not a dynamic executable")) || !strict {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s: %w: %s", path, err, bytes.TrimSpace(out))
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "not found") && strict {
			return nil, fmt.Errorf("ldd %s: %s", path, strings.TrimSpace(line))
		}
		if m := lddLine.FindStringSubmatch(line); m != nil {
			libs = append(libs, m[1])
		}
	}
	return libs, nil
}

// buildContext writes the docker build context: a Dockerfile that copies
// a root file system FROM scratch, and that file system. It returns the
// bytes of file content.
func buildContext(w io.Writer, files []file) (int64, error) {
	tw := tar.NewWriter(w)
	var size int64
	// An idle server container of a docker-compose topology waits for the
	// node a run gives it (see compose.go).
	dockerfile := []byte("FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [\"" + SelfPath + "\", \"" + NodeExecCommand + "\", \"" + SlotSpec + "\"]\n")
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		return 0, err
	}
	if _, err := tw.Write(dockerfile); err != nil {
		return 0, err
	}
	// A /tmp for servers that want one.
	for _, dir := range []string{"rootfs/tmp/", "rootfs" + filepath.Dir(SlotSpec) + "/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o1777}); err != nil {
			return 0, err
		}
	}
	for _, f := range files {
		name := "rootfs" + f.path
		if f.link != "" {
			if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: f.link, Mode: 0o777}); err != nil {
				return 0, err
			}
			continue
		}
		// os.Open follows links: a library named by a link is copied as
		// the file it points to, at the name the loader asks for.
		src := f.path
		if f.from != "" {
			src = f.from
		}
		fh, err := os.Open(src)
		if err != nil {
			return 0, err
		}
		st, err := fh.Stat()
		if err != nil {
			fh.Close()
			return 0, err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: st.ModTime()}); err != nil {
			fh.Close()
			return 0, err
		}
		n, err := io.Copy(tw, fh)
		fh.Close()
		if err != nil {
			return 0, err
		}
		size += n
	}
	return size, tw.Close()
}
