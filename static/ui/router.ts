// Hash routing: `#/apps`, `#/settings/developer`, `#/invite/<id>`. The route is the hash's
// decoded segments; pages read it with useRoute() and re-render when it changes.
import { useEffect, useState } from "preact/hooks";

export function currentRoute(): string[] {
  return location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
}

export function useRoute(): string[] {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const changed = () => setRoute(currentRoute());
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}

export const href = (...segments: string[]) => `#/${segments.map(encodeURIComponent).join("/")}`;
