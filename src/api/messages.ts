/** Every user-facing message of the contract, in one place: handlers and tests import them from here. */
import { PLUGIN_GROUPS } from '../engine/types.js';
import {
  BUNDLE_FORMAT, BUNDLE_VERSION, MAX_BUNDLE_DEPTH, MAX_BUNDLE_OUTPUTS_PER_TARGET, MAX_BUNDLE_TARGETS, MAX_OPEN_VALUES, MAX_FINDING_DETAIL, MAX_FINDING_TITLE, MAX_OUTPUT_ERROR,
  type BundleProblem, type OutputField,
} from '../store/bundle.js';
import { MAX_FINDINGS, MAX_NOTES, MAX_SUMMARY } from '../store/engine.js';
import { MAX_SESSION_NAME } from '../store/sessions.js';

export { HTTP_MESSAGES } from '../http/jsend.js';

export const MESSAGES = {
  actionMustBeNone: 'Action must be None',
  invalidSessionId: 'Invalid session id provided',
  incorrectQueryParameters: 'Incorrect query parameters',
  dbError: 'An unknown exception occurred when performing a DB operation',
  invalidParameterType: 'Invalid parameter type provided',
  invalidTargetReference: 'Invalid target reference provided',
  invalidTargetUrl: 'Invalid target URL provided',
  invalidConfigurationItem: 'Invalid configuration item specified',
} as const;

/** The intercepting proxy's messages (extension). */
export const PROXY_MESSAGES = {
  disabled: 'The proxy is off (--no-proxy): it has no CA',
} as const;

/** The assessment engine's messages (plugins, worklist, workers, outputs, errors). */
export const ENGINE_MESSAGES = {
  pluginTypeNotInGroup: 'Plugin type not found in selected plugin group',
  pluginNotFound: 'Plugin not found',
  workerIdAndActionNone: 'worker_id and action should be None',
  argumentsNull: 'Arguments should not be null',
  pluginListEmpty: 'Plugin list should not be empty',
  targetListEmpty: 'Target list should not be empty',
  workIdNone: 'work_id should not be None',
  actionNone: 'action should be None',
  invalidWorker: 'Invalid worker referenced',
  invalidOutput: 'Invalid plugin output reference provided',
  invalidError: 'Invalid error reference provided',
} as const;

/** The fixed messages of bundle imports (extension); `bundleProblem` words every refusal. */
export const BUNDLE_MESSAGES = {
  mediaType: 'Unsupported media type: send application/json',
  notUtf8: 'Bundle is not valid UTF-8',
  notJson: 'Bundle is not valid JSON',
  notObject: 'Bundle must be a JSON object',
  tooDeep: `Bundle nests arrays and objects more than ${MAX_BUNDLE_DEPTH} levels deep`,
  tooManyValues: `Bundle holds more than ${MAX_OPEN_VALUES} values in one array or object and those around it: export a target's many transactions as HAR instead`,
  format: `Not an assessd session bundle: "format" must be "${BUNDLE_FORMAT}"`,
  session: 'Bundle "session" must be an object',
  nameType: 'Bundle session.name must be a string',
  noName: 'A session name is required: session.name in the bundle, or the name argument',
  invalidName: `Session name must be 1 to ${MAX_SESSION_NAME} characters`,
  targets: 'Bundle "targets" must be an array',
} as const;

const RANK_RULE = 'must be an integer from -1 to 5';

/** What a bundled output's field must be, as a refusal words it after the field's path. */
export const OUTPUT_FIELD_RULES: Record<OutputField, string> = {
  plugin_key: 'must be "<plugin_type>@<plugin_code>"',
  plugin_code: 'must be a code such as OWTF-IG-001',
  plugin_group: `must be one of ${PLUGIN_GROUPS.join(', ')}`,
  plugin_type: 'must be a type of its plugin_group',
  status: 'must be one of Successful, Aborted, Crashed, Skipped, Running',
  owtf_rank: RANK_RULE,
  user_rank: RANK_RULE,
  user_notes: `must be a string of at most ${MAX_NOTES} bytes of UTF-8`,
  findings: `must be an array of at most ${MAX_FINDINGS} findings`,
  exit_code: 'must be an integer or null',
  error: `must be a string of at most ${MAX_OUTPUT_ERROR} characters, or null`,
  started_at: 'must be an ISO 8601 time or null',
  ended_at: 'must be an ISO 8601 time, not before started_at, or null',
  output: `must be a string of at most ${MAX_SUMMARY} bytes of UTF-8`,
  finding: 'must be an object',
  'finding.rank': RANK_RULE,
  'finding.title': `must be a string of at most ${MAX_FINDING_TITLE} characters`,
  'finding.detail': `must be a string of at most ${MAX_FINDING_DETAIL} characters`,
  'finding.transactions': 'must be an array of at most 1000 transaction ids',
  'finding.transactions_total': 'must be a positive integer',
};

/** A refused bundle's message, and the field it names (for the fail envelope's `data`). */
export function bundleProblem(problem: BundleProblem): { message: string; field: string; detail: string } {
  const M = BUNDLE_MESSAGES;
  switch (problem.kind) {
    case 'not-utf8': return { message: M.notUtf8, field: 'body', detail: 'not valid UTF-8' };
    case 'not-json': return { message: M.notJson, field: 'body', detail: 'not valid JSON' };
    case 'not-object': return { message: M.notObject, field: 'body', detail: 'not a JSON object' };
    case 'too-deep': return { message: M.tooDeep, field: 'body', detail: `at most ${MAX_BUNDLE_DEPTH} levels deep` };
    case 'too-many-values': return { message: M.tooManyValues, field: 'body', detail: `at most ${MAX_OPEN_VALUES} values open at once` };
    case 'format': return { message: M.format, field: 'format', detail: `must be "${BUNDLE_FORMAT}"` };
    case 'version': {
      const message = typeof problem.version === 'number'
        ? `Bundle version ${problem.version} is not supported: this build reads version ${BUNDLE_VERSION}`
        : `Bundle "version" must be a number: this build reads version ${BUNDLE_VERSION}`;
      return { message, field: 'version', detail: `must be ${BUNDLE_VERSION}` };
    }
    case 'session': return { message: M.session, field: 'session', detail: 'must be an object' };
    case 'name-type': return { message: M.nameType, field: 'session.name', detail: 'must be a string' };
    case 'no-name': return { message: M.noName, field: 'name', detail: 'required' };
    case 'invalid-name': {
      const field = problem.from === 'argument' ? 'name' : 'session.name';
      return { message: M.invalidName, field, detail: `must be 1 to ${MAX_SESSION_NAME} characters` };
    }
    case 'targets': return { message: M.targets, field: 'targets', detail: 'must be an array' };
    case 'too-many':
      return { message: `Bundle has ${problem.count} targets: at most ${MAX_BUNDLE_TARGETS} can be imported at once`, field: 'targets', detail: `at most ${MAX_BUNDLE_TARGETS}` };
    case 'target': return { message: `targets[${problem.index}] must be an object`, field: `targets[${problem.index}]`, detail: 'must be an object' };
    case 'target-url': {
      const field = `targets[${problem.index}].target_url`;
      const detail = {
        missing: 'is missing',
        'not-string': 'must be a string',
        invalid: 'is not an absolute http(s) URL',
        'not-one-host': 'is not one host (a DNS name, an IPv4 or an IPv6 address; no *, ranges or lists)',
      }[problem.what];
      return { message: `${field} ${detail}`, field, detail };
    }
    case 'outputs': {
      const field = `targets[${problem.index}].outputs`;
      return { message: `${field} must be an array`, field, detail: 'must be an array' };
    }
    case 'too-many-outputs': {
      const field = `targets[${problem.index}].outputs`;
      return { message: `${field} gives its target more than ${MAX_BUNDLE_OUTPUTS_PER_TARGET} outputs (one per plugin)`, field, detail: `at most ${MAX_BUNDLE_OUTPUTS_PER_TARGET} a target` };
    }
    case 'transactions': {
      const field = `targets[${problem.index}].transactions`;
      return { message: `${field} must be an array of HAR entries`, field, detail: 'must be an array' };
    }
    case 'output': {
      const field = `targets[${problem.index}].outputs[${problem.output}]`;
      return { message: `${field} must be an object`, field, detail: 'must be an object' };
    }
    case 'output-field': {
      const { index, output, finding } = problem;
      const name = problem.field === 'finding' ? '' : `.${problem.field.replace(/^finding\./, '')}`;
      const field = `targets[${index}].outputs[${output}]${finding === undefined ? '' : `.findings[${finding}]`}${name}`;
      const detail = { missing: 'is missing', invalid: OUTPUT_FIELD_RULES[problem.field], repeated: 'repeats another output of the same target' }[problem.what];
      return { message: `${field} ${detail}`, field, detail };
    }
  }
}

/** The transactions handler's messages (upstream's), and the extensions' (HAR import, filters). */
export const TRANSACTION_MESSAGES = {
  invalidTransaction: 'Invalid transaction referenced',
  needsTransactionId: 'Needs transaction id',
  harMediaType: 'Unsupported media type: send application/json (a HAR 1.2 document)',
} as const;

/** A replay refused: what is wrong with it. */
export const invalidReplay = (detail: string) => `Invalid replay: ${detail}`;

/** Copy as code refused: what in the transaction no HTTP client can send. */
export const noCode = (detail: string) => `Cannot write this request as code: ${detail}`;

/** A filter expression refused: where, and what is wrong. */
export const invalidFilter = (detail: string) => `Invalid filter expression: ${detail}`;

/** Why a line of a bulk add was refused, as `POST /api/v1/targets/bulk` words it. */
export const ADD_FAILURE_REASONS = {
  'invalid-url': 'invalid URL',
  'not-one-host': 'not one host (a DNS name, an IPv4 or an IPv6 address; no *, ranges or lists)',
  'already-in-session': 'already in the session',
  repeated: 'repeated in the request',
} as const;
