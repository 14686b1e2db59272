// The vocabulary of the configuration. Settings come from environment variables and an optional
// YAML file (environment wins); every part that has settings of its own owns a section: each
// platform adapter in its folder (`adapters/<platform>/config.ts`), with the YAML section's zod
// schema, the environment variables it reads, its defaults and its error messages. The loader
// (main/config.ts) composes the sections. An error names the bad key, never its value.
import { z } from "zod";

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** The fewest characters a secret of our choosing may have (a platform route's secret, a webhook's). */
export const MIN_SECRET_CHARS = 16;

/** The environment, as the loader reads it. */
export type Env = Readonly<Record<string, string | undefined>>;

/** One environment variable, validated on its own so that the error names it; unset or empty: undefined. */
export function envValue<T>(env: Env, name: string, schema: z.ZodType<T>): T | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`${name}: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
  return parsed.data;
}

/** A whole number of at least `min` (and at most `max`), from a variable's text or a YAML number. */
export function intFrom(min: number, max?: number): z.ZodCoercedNumber<unknown> {
  const base = z.coerce.number().int().min(min);
  return max === undefined ? base : base.max(max);
}

/** A comma-separated list in one variable, each item checked by `item`. */
export const listOf = <T>(item: z.ZodType<T, string>) =>
  z.string().transform((value) => value.split(",").map((part) => part.trim()).filter((part) => part !== "")).pipe(z.array(item));

/**
 * One section of the configuration: how its YAML section looks (`schema`, snake_case keys;
 * checked with the whole file) and the settings it gives from the environment and that section.
 */
export interface ConfigSection<Schema extends z.ZodType, Settings> {
  readonly schema: Schema;
  /** The settings; `file` is the section as the schema parsed it (undefined when absent). Throws ConfigError. */
  load(env: Env, file: z.output<Schema> | undefined): Settings;
}

/** Sections by their YAML key. */
export type ConfigSections = Record<string, ConfigSection<z.ZodType, unknown>>;

/** The settings a set of sections gives, by key. */
export type SectionSettings<S extends ConfigSections> = {
  [K in keyof S]: S[K] extends ConfigSection<z.ZodType, infer Settings> ? Settings : never;
};

/** The file schema's entries for a set of sections (each section optional in the file). */
export type SectionSchemas<S extends ConfigSections> = {
  [K in keyof S]: S[K] extends ConfigSection<infer Schema, unknown> ? z.ZodOptional<Schema> : never;
};

export function sectionSchemas<S extends ConfigSections>(sections: S): SectionSchemas<S> {
  return Object.fromEntries(Object.entries(sections).map(([key, section]) => [key, section.schema.optional()])) as SectionSchemas<S>;
}

/** Every section's settings, from the environment and the parsed file. */
export function loadSections<S extends ConfigSections>(sections: S, env: Env, file: Partial<Record<keyof S, unknown>>): SectionSettings<S> {
  return Object.fromEntries(Object.entries(sections).map(([key, section]) => [key, section.load(env, file[key])])) as SectionSettings<S>;
}
