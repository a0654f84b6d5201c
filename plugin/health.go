package plugin

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Health calls the standard grpc.health.v1 Check for the service "plugin"
// on the plugin's connection, as docs/writing-plugins.md requires (go-plugin's Ping
// ignores the status). It returns nil only for SERVING; another status, or a
// plugin without the service, gives an error wrapping ErrNotServing. A ctx
// that ends first gives an error wrapping ctx.Err(); a dead plugin one
// wrapping ErrPluginExited.
func (c *Client) Health(ctx context.Context) error {
	cctx, cancel := c.remote.join(ctx)
	defer cancel()
	resp, err := healthpb.NewHealthClient(c.conn).Check(cctx, &healthpb.HealthCheckRequest{Service: healthService})
	if err != nil {
		if code := status.Code(err); (code == codes.NotFound || code == codes.Unimplemented) && ctx.Err() == nil {
			return fmt.Errorf("plugin %q: no health status for service %q (%s): %w",
				c.remote.name, healthService, code, ErrNotServing)
		}
		return c.remote.callError(ctx, "Health", err)
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("plugin %q: health is %s: %w", c.remote.name, s, ErrNotServing)
	}
	return nil
}
