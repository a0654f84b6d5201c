package cmdengine

import (
	"fmt"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/jsonconfig"
)

// diags collects diagnostics while decoding configuration.
type diags []plugin.Diagnostic

func (d *diags) errorf(attr, format string, args ...any) {
	*d = append(*d, plugin.Diagnostic{Severity: plugin.SeverityError, Summary: fmt.Sprintf(format, args...), Attribute: attr})
}

func (d diags) hasErrors() bool { return jsonconfig.HasErrors(d) }

// decodeStrict decodes the JSON object raw into v (a pointer to a struct),
// reporting a non-object, invalid JSON, wrong types and unknown keys as
// diagnostics named by attribute path. what names the configuration in
// messages ("cmd engine config"). It returns false when v is unusable or a
// key is unknown.
func decodeStrict(d *diags, raw []byte, v any, what string) bool {
	jd, usable := jsonconfig.Decode(raw, v, what)
	*d = append(*d, jd...)
	return usable && len(jd) == 0
}
