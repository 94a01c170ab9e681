// MySQL (the stand-in runs MariaDB) through the API, on the real engine with the stand-in image: see ./lifecycle.ts.
import { sqlClient } from "../../helpers/databases";
import { describeDatabaseLifecycle } from "./lifecycle";

describeDatabaseLifecycle("mysql", sqlClient);
