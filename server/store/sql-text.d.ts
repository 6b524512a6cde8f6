// Migration files are embedded in the executable with Bun's text loader (`with { type: "text" }`).
declare module "*.sql" {
  const text: string;
  export default text;
}
