package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
)

// Kind is what the engine is: user mapping and option spellings depend on it.
type Kind struct {
	// Product is "Docker Engine" or "Podman Engine"; Version is its version.
	Product, Version string
	Podman, Rootless bool
}

// Asker is what Detect asks the engine (a subset of *client.Client). A client that also has
// the *client.Client's Dialer lets Detect read what the typed answers drop (rootless Podman).
type Asker interface {
	ServerVersion(ctx context.Context, options client.ServerVersionOptions) (client.ServerVersionResult, error)
	Info(ctx context.Context, options client.InfoOptions) (client.SystemInfoResult, error)
}

// Detect asks the engine what it is. On an error the Kind is still the best reading of what
// did answer (a rootful Docker engine when nothing did); the caller should not cache it.
func Detect(ctx context.Context, c Asker) (Kind, error) {
	v, verr := c.ServerVersion(ctx, client.ServerVersionOptions{})
	info, ierr := c.Info(ctx, client.InfoOptions{})
	k := KindOf(v, info.Info)
	if k.Podman && !k.Rootless && verr == nil && ierr == nil {
		k.Rootless, ierr = podmanRootless(ctx, c)
	}
	return k, errors.Join(verr, ierr)
}

// KindOf reads the engine's kind from its version and info answers: Podman names a
// "Podman Engine" component; rootless Docker lists "name=rootless" among its security options.
// Rootless Podman does not (4.3 reports an empty list there); it says so in a top-level
// "Rootless" field of the same answer, which the typed client drops: see podmanRootless.
func KindOf(v client.ServerVersionResult, info system.Info) Kind {
	k := Kind{Product: "Docker Engine", Version: v.Version}
	for _, c := range v.Components {
		if strings.EqualFold(c.Name, "Podman Engine") {
			k.Podman, k.Product, k.Version = true, c.Name, c.Version
		}
	}
	k.Rootless = slices.ContainsFunc(info.SecurityOptions, func(o string) bool {
		for _, kv := range strings.Split(o, ",") {
			if kv == "name=rootless" {
				return true
			}
		}
		return false
	})
	return k
}

// podmanRootless reads the "Rootless" field of Podman's Docker-compatible /info answer with a
// plain HTTP request over the client's own dialer (unix, tcp, TLS or ssh alike). A client
// without a dialer (a test fake) answers false.
func podmanRootless(ctx context.Context, c any) (bool, error) {
	d, ok := c.(interface {
		Dialer() func(context.Context) (net.Conn, error)
	})
	if !ok {
		return false, nil
	}
	conn, err := d.Dialer()(ctx)
	if err != nil {
		return false, fmt.Errorf("podman info: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	return rootlessFromInfo(conn)
}

// rootlessFromInfo sends GET /info on conn and reads the top-level "Rootless" field.
func rootlessFromInfo(conn io.ReadWriter) (bool, error) {
	req, err := http.NewRequest(http.MethodGet, "http://docker/info", nil)
	if err != nil {
		return false, err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return false, fmt.Errorf("podman info: %w", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return false, fmt.Errorf("podman info: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return false, fmt.Errorf("podman info: %s", res.Status)
	}
	var body struct {
		Rootless bool `json:"Rootless"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 4<<20)).Decode(&body); err != nil {
		return false, fmt.Errorf("podman info: %w", err)
	}
	return body.Rootless, nil
}
