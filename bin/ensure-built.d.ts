// Types of ensure-built.js, for the TypeScript that imports it (the benchmark runner).
export declare const ROOT: string;
export declare function typescriptCompiler(): string | null;
export declare function buildDist(tsc: string): boolean;
