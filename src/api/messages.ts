/** Every user-facing message of the contract, in one place: handlers and tests import them from here. */
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

/** Why a line of a bulk add was refused, as `POST /api/v1/targets/bulk` words it. */
export const ADD_FAILURE_REASONS = {
  'invalid-url': 'invalid URL',
  'already-in-session': 'already in the session',
  repeated: 'repeated in the request',
} as const;
