/** The service's entry point: configuration from the environment, then listen until a signal. */
import { loadConfig } from './config.js';
import { runService } from './run-service.js';

// Only the entry point knows whether stdout is a terminal: with LOG_FORMAT unset, that picks pretty logs.
const runtime = { stdout_terminal: process.stdout.isTTY === true };
runService(() => loadConfig(undefined, runtime));
