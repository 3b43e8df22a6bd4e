// Where Floodgate writes what an operator must see: one small interface that console, pino and winston fit.

/** Where Floodgate writes what an operator must see. `console` fits; so do pino and winston loggers. */
export interface Logger {
  warn(message: string, details?: Record<string, unknown>): void;
  error(message: string, details?: Record<string, unknown>): void;
}
