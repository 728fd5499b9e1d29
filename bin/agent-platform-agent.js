#!/usr/bin/env node
'use strict';
/**
 * agent-platform-agent: the reference agent, as `agent-platform agent` runs it (`npx agent-platform-agent --help`).
 * The token comes from AGENT_TOKEN or a file (--token-file, AGENT_TOKEN_FILE), never from the command line.
 */
process.argv.splice(2, 0, 'agent');
require('./agent-platform.js');
