'use strict';
// Logging for an Obversa plugin: one hclog JSON object per line on stderr,
// which the host parses and re-logs under the plugin's name. Standard
// output belongs to the handshake line alone.

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'];

// hclogTime formats a date as go-plugin parses "@timestamp":
// 2006-01-02T15:04:05.000000Z07:00 (microseconds, UTC).
function hclogTime(d) {
  return d.toISOString().slice(0, 23) + '000Z';
}

// logger returns {trace, debug, info, warn, error}(message, fields).
function logger(module) {
  const out = {};
  for (const level of LEVELS) {
    out[level] = (message, fields = {}) => {
      const entry = { '@level': level, '@message': message, '@module': module, '@timestamp': hclogTime(new Date()) };
      for (const [k, v] of Object.entries(fields)) {
        entry[k] = v instanceof Error ? v.message : v;
      }
      process.stderr.write(JSON.stringify(entry) + '\n');
    };
  }
  return out;
}

module.exports = { logger, hclogTime };
