/** The service's entry point: configuration from the environment, then listen until a signal. */
import { loadConfig } from './config.js';
import { runService } from './run-service.js';

runService(() => loadConfig());
