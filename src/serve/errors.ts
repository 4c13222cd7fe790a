// The errors a request can get. RequestError is a 400: the payload does not match the model's
// declared inputs (the message names the input, what was expected, what came, and a fix);
// OverloadError is a 503: the queue is full (Retry-After says when to come back).

import { KilnError } from '../core/errors.js';

export class RequestError extends KilnError {
  override name = 'RequestError';
}

export class OverloadError extends KilnError {
  override name = 'OverloadError';
  constructor(message: string, readonly retryAfterSeconds: number) {
    super(message, 'POST /v1/predict', 'retry after the time in Retry-After, or add instances');
  }
}
