export * from "./sale.ts";
