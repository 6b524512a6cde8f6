import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App, readSettings } from "./app.tsx";
import "./decisions.css";

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App settings={readSettings(document)} search={window.location.search} />
  </StrictMode>,
);
