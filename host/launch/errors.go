package launch

import "errors"

var (
	// ErrConfig is returned when a plugin's Configure answers with an
	// error-severity diagnostic.
	ErrConfig = errors.New("plugin configuration refused")
	// ErrPluginChanged is returned when a cached binary no longer matches
	// its digest. Code PLUGIN_CHANGED.
	ErrPluginChanged = errors.New("PLUGIN_CHANGED")
	// ErrType is returned when a plugin does not serve the type the run file
	// declares.
	ErrType = errors.New("plugin does not serve its declared type")
)
