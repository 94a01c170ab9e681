// Redis through the API, on the real engine with the stand-in image: see ./lifecycle.ts.
import { redisClient } from "../../helpers/databases";
import { describeDatabaseLifecycle } from "./lifecycle";

describeDatabaseLifecycle("redis", redisClient);
