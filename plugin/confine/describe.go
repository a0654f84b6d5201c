package confine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/obversa/obversa/internal/cgroup"
)

// Description is the confinement in force for one plugin on one kernel,
// in words: what `status`, `show` and `plugin describe` print.
type Description struct {
	// Enforced is false when the kernel enforces none of the file and
	// network rules (no Landlock).
	Enforced bool `json:"enforced"`
	// Write lists the trees the plugin may write.
	Write []string `json:"write"`
	// Protected lists the trees never writable whatever Write says.
	Protected []string `json:"protected,omitempty"`
	// Read is "everything" or "everything but" the DenyRead trees.
	Read string `json:"read"`
	// Network is "allowed", "denied (TCP connect and bind)" or why it is
	// not confined.
	Network string `json:"network"`
	// Memory is "no limit", the limit and its controller, or why it is
	// not enforced.
	Memory string `json:"memory"`
	// Required says the run refuses to launch the plugin without all of
	// it.
	Required bool `json:"required,omitempty"`
	// Missing lists what the kernel cannot enforce (Support.Missing).
	Missing []string `json:"missing,omitempty"`
}

// Describe says what of s is in force on a kernel with sup.
func Describe(s Spec, sup Support, required bool) Description {
	d := Description{
		Enforced: sup.LandlockABI > 0, Required: required, Missing: sup.Missing(s),
		Write: append(append([]string{}, s.Write...), s.Own...), Protected: s.Protect,
		Read: "everything",
	}
	if len(s.DenyRead) > 0 {
		d.Read = "everything but " + strings.Join(s.DenyRead, ", ")
	}
	switch {
	case s.Network:
		d.Network = "allowed"
	case sup.LandlockABI >= MinNetworkABI:
		d.Network = "denied (TCP connect and bind)"
	default:
		d.Network = "not confined"
	}
	switch {
	case s.MemoryBytes == 0:
		d.Memory = "no limit"
	case sup.Cgroup.Memory == cgroup.MemoryNone:
		d.Memory = FormatBytes(s.MemoryBytes) + " not enforced"
	default:
		d.Memory = FormatBytes(s.MemoryBytes) + " (" + string(sup.Cgroup.Memory) + ")"
	}
	if !d.Enforced {
		d.Write, d.Protected, d.Read = nil, nil, "everything (not confined)"
		if !s.Network {
			d.Network = "not confined"
		}
	}
	return d
}

// Lines renders d as labelled lines for a terminal.
func (d Description) Lines() []string {
	var out []string
	if d.Enforced {
		out = append(out, "writes:    "+strings.Join(d.Write, ", "))
		if len(d.Protected) > 0 {
			out = append(out, "protected: "+strings.Join(d.Protected, ", ")+" (records, locks, other runs, plugin cache: never writable)")
		}
	} else {
		out = append(out, "writes:    anywhere (not confined)")
	}
	out = append(out, "reads:     "+d.Read, "network:   "+d.Network, "memory:    "+d.Memory)
	for _, m := range d.Missing {
		what := "not enforced: "
		if d.Required {
			what = "refused, required: "
		}
		out = append(out, what+m)
	}
	return out
}

// FormatBytes renders n bytes in the largest binary unit, to one decimal:
// "512 MiB", "1.5 GiB".
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") + " " + units[i]
}

// String says in words whether the rules are enforced.
func (d Description) String() string {
	if !d.Enforced {
		return "none"
	}
	return fmt.Sprintf("writes %d trees, reads %s, network %s, memory %s", len(d.Write), d.Read, d.Network, d.Memory)
}
