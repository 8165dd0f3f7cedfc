#!/usr/bin/env node
/** CLI: a thin shell over start() (src/cli-main.ts). The build runs it from a code-cached bundle (src/load-bundle.ts). */
import { runCli } from './cli-main.js';

runCli();
